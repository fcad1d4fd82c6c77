//! `--dynamic K`: the tools `retrieve_tools` registers as real MCP tools.
//!
//! A bounded pool with least-recently-used eviction: a search registers its top K hits at the
//! back, a hit already there moves to the back, a call to a registered tool moves it to the
//! back, and when the pool is over capacity the front goes. The tool list therefore stays small
//! (hosts resend every tool schema with each model turn) while what the model is using stays.

use std::collections::VecDeque;

#[derive(Debug)]
pub(crate) struct ToolPool {
    capacity: usize,
    /// Least recently used first.
    names: VecDeque<String>,
}

impl ToolPool {
    pub(crate) fn new(capacity: usize) -> ToolPool {
        ToolPool {
            capacity: capacity.max(1),
            names: VecDeque::new(),
        }
    }

    /// Registers `names` (most relevant first); returns whether the set of tools changed.
    pub(crate) fn register(&mut self, names: &[String]) -> bool {
        let before: Vec<String> = {
            let mut v: Vec<String> = self.names.iter().cloned().collect();
            v.sort();
            v
        };
        // Most relevant last, so it is the last to be evicted.
        for name in names.iter().rev() {
            self.names.retain(|n| n != name);
            self.names.push_back(name.clone());
        }
        while self.names.len() > self.capacity {
            self.names.pop_front();
        }
        let mut after: Vec<String> = self.names.iter().cloned().collect();
        after.sort();
        before != after
    }

    /// Marks a registered tool as just used.
    pub(crate) fn touch(&mut self, name: &str) {
        if let Some(i) = self.names.iter().position(|n| n == name) {
            let n = self.names.remove(i).expect("index in range");
            self.names.push_back(n);
        }
    }

    pub(crate) fn contains(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }

    /// The registered tools, least recently used first.
    pub(crate) fn names(&self) -> Vec<String> {
        self.names.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_pool_is_bounded_and_evicts_the_least_recently_used() {
        let mut pool = ToolPool::new(3);
        assert!(pool.register(&names(&["a", "b"])));
        assert_eq!(pool.names(), names(&["b", "a"]));
        assert!(
            !pool.register(&names(&["a"])),
            "re-registering changes nothing"
        );
        pool.touch("b");
        assert!(pool.register(&names(&["c", "d"])));
        // a was least recently used; b was touched, so it stays.
        assert_eq!(pool.names(), names(&["b", "d", "c"]));
        assert!(!pool.contains("a"));
        assert!(pool.register(&names(&["e", "f", "g", "h"])));
        assert_eq!(pool.names(), names(&["g", "f", "e"]));
    }
}
