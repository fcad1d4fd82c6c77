import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrorCode, RpcError, errorReply, notification, resultReply, toRpcError } from '../lib/rpc.js';

test('a reply always carries result, {} when the handler returned nothing', () => {
  assert.deepEqual(resultReply('conn-a:1', undefined), { jsonrpc: '2.0', id: 'conn-a:1', result: {} });
  assert.deepEqual(resultReply(7, null), { jsonrpc: '2.0', id: 7, result: {} });
  assert.deepEqual(resultReply('proxy:1', { a: 1 }), { jsonrpc: '2.0', id: 'proxy:1', result: { a: 1 } });
});

test('errors keep their code; plain errors become -32000 with their message', () => {
  assert.deepEqual(toRpcError(new RpcError(ErrorCode.INVALID_PARAMS, 'bad "x"')), { code: -32602, message: 'bad "x"' });
  assert.deepEqual(toRpcError(new Error('tab 3 is gone')), { code: -32000, message: 'tab 3 is gone' });
  assert.deepEqual(toRpcError('string thrown'), { code: -32000, message: 'string thrown' });
  assert.equal(toRpcError(new Error('')).message.length > 0, true);
});

test("a DevTools protocol error's own sentence is the message, not its JSON", () => {
  const cdp = new Error('{"code":-32000,"message":"Inspected target navigated or closed"}');
  assert.deepEqual(toRpcError(cdp), { code: -32000, message: 'Inspected target navigated or closed' });
  assert.equal(toRpcError(new Error('{not json')).message, '{not json');
  assert.equal(toRpcError(new Error('{"code":1}')).message, '{"code":1}');
});

test('error replies keep the id and have no result', () => {
  const reply = errorReply('conn-a:2', new RpcError(ErrorCode.METHOD_NOT_FOUND, 'nope'));
  assert.deepEqual(reply, { jsonrpc: '2.0', id: 'conn-a:2', error: { code: -32601, message: 'nope' } });
  assert.equal('result' in reply, false);
});

test('notifications have no id', () => {
  const message = notification('build_info', { version: '1' });
  assert.deepEqual(message, { jsonrpc: '2.0', method: 'build_info', params: { version: '1' } });
  assert.equal('id' in message, false);
});
