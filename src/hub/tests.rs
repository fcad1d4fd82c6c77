//! Routing rules without sockets: detached peers, and a detached cluster fed node messages.
