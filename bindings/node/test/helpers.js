'use strict';
// Shared by the tests: store configs per backend and conversation builders
// (the shapes of tests/support/conv.rs). No tests here.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const BACKENDS = ['jsonl', 'jsonl-none', 'sqlite'];
const FIXTURES = process.env.DSH_FIXTURES || '/work/shared/fixtures/upstream';

const created = [];
process.on('exit', () => {
  for (const dir of created) fs.rmSync(dir, { recursive: true, force: true });
});

/** A fresh 0700 directory, removed when the process exits. */
function tempDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dsh-node-'));
  fs.chmodSync(dir, 0o700);
  created.push(dir);
  return dir;
}

function configFor(kind, dir, extra = {}) {
  const base = {
    jsonl: { backend: 'jsonl', root: path.join(dir, 'root') },
    'jsonl-none': { backend: 'jsonl', root: path.join(dir, 'root'), compression: 'none' },
    sqlite: { backend: 'sqlite', path: path.join(dir, 'sessions.db') },
  }[kind];
  if (!base) throw new Error(`unknown backend ${kind}`);
  return { ...base, ...extra };
}

const MODEL_SOURCE = { kind: 'model', provider: 'deepseek-official', model: 'deepseek-v4-flash' };

const userMessage = (id, text) => ({ id, role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } });

function assistantMessage(turn, step, id, text, calls = []) {
  const content = [{ type: 'text', text }, ...calls.map((c) => ({ type: 'tool-call', id: c, name: 'bash', arguments: { command: 'ls' } }))];
  return { turn, step, message: { id, role: 'assistant', content, source: MODEL_SOURCE } };
}

const toolCall = (turn, step, callId) => ({ turn, step, callId, name: 'bash', arguments: { command: 'ls' } });

function toolResult(turn, step, callId, text) {
  return {
    turn,
    step,
    message: {
      id: `result-${callId}`,
      role: 'user',
      content: [{ type: 'tool-result', toolCallId: callId, content: [{ type: 'text', text }] }],
      source: { kind: 'tool', callId },
    },
  };
}

const textDelta = (turn, step, text) => ({ turn, step, chunk: { type: 'text-delta', index: 0, text } });
const APPEND = { surfaceOp: 'append' };

/** turn/start … assistant/message with a tool-call block and its tool/call; no result. */
function openTurnWithCall(s, turn) {
  s.append('turn/start', { turn });
  s.append('user/message', userMessage(`u${turn}`, `question ${turn}`), APPEND);
  s.append('step/start', { turn, step: 1 });
  for (const piece of ['Let', ' me', ' look', '.']) s.append('assistant/chunk', textDelta(turn, 1, piece));
  const call = `call-${turn}`;
  s.append('assistant/message', assistantMessage(turn, 1, `a${turn}-1`, 'Let me look.', [call]), APPEND);
  return s.append('tool/call', toolCall(turn, 1, call));
}

/** A whole turn with one tool round trip (15 events); returns the seq of its turn/end. */
function completeTurn(s, turn) {
  openTurnWithCall(s, turn);
  const call = `call-${turn}`;
  s.append('tool/result', toolResult(turn, 1, call, 'file.txt'), APPEND);
  s.append('step/end', { turn, step: 1 });
  s.append('step/start', { turn, step: 2 });
  s.append('assistant/message', assistantMessage(turn, 2, `a${turn}-2`, 'There is one file.'), APPEND);
  s.append('step/end', { turn, step: 2 });
  return s.append('turn/end', { turn, reason: { kind: 'completed' } });
}

const types = (events) => events.map((e) => e.type);

module.exports = {
  BACKENDS,
  FIXTURES,
  tempDir,
  configFor,
  userMessage,
  assistantMessage,
  toolCall,
  toolResult,
  textDelta,
  openTurnWithCall,
  completeTurn,
  types,
  APPEND,
};
