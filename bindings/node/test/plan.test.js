'use strict';
// Plan mode through the wrapper: /plan, exit review (check + approve), the
// pending exit committed by preStep, projection, config errors.

const test = require('node:test');
const assert = require('node:assert/strict');

const dsh = require('..');
const { Store, PlanMode } = dsh;
const h = require('./helpers');

const SECTION = '## Plan mode\nOnly read; propose a plan.';

for (const backend of h.BACKENDS) {
  test(`/plan command and exit review (${backend})`, () => {
    const store = Store.open(h.configFor(backend, h.tempDir()));
    const plan = new PlanMode({ section: SECTION });
    const s = store.start({ id: 'p' });
    try {
      assert.deepEqual(plan.get(s), { active: false });
      assert.equal(plan.section(s), '');
      assert.deepEqual(plan.exitCheck(s, '# Plan'), { ok: false, error: 'exit_plan_mode is only available in plan mode' });

      const on = plan.command(s, '  ');
      assert.deepEqual([on.kind, on.text], ['success', 'Plan mode on. Use /plan off to leave.']);
      const last = s.events().at(-1);
      assert.deepEqual([last.type, last.data], ['plan/mode', { active: true }]);
      assert.deepEqual(plan.get(s), { active: true });
      assert.equal(plan.section(s), SECTION);

      s.append('turn/start', { turn: 1 });
      s.append('step/start', { turn: 1, step: 1 });
      assert.deepEqual(plan.exitCheck(s, 'no heading here'), {
        ok: false,
        error: 'exit_plan_mode requires a non-empty markdown plan starting with a # heading',
      });
      const check = plan.exitCheck(s, '# Plan\n- read the code\n- change it');
      assert.equal(check.ok, true);
      const q = check.review.questions[0];
      assert.equal(q.id, 'plan-review');
      assert.equal(q.detail, '# Plan\n- read the code\n- change it');
      assert.deepEqual(q.options.map((o) => o.label), ['Approve', 'Keep planning']);

      assert.deepEqual(plan.exitAnswer(s, { answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: 'more tests' }] }), {
        approved: false,
        error: 'The user chose to keep planning; their feedback: more tests',
      });
      assert.equal(plan.exitAnswer(s, { dismissed: true }).approved, false);
      assert.throws(() => plan.exitAnswer(s, { answers: 'Approve' }), dsh.InvalidArgumentError);
      assert.deepEqual(plan.exitAnswer(s, '{"answers":[{"id":"plan-review","selected":["Approve"],"custom":null}]}'), { approved: true });
      assert.deepEqual(plan.get(s), { active: true, pending: false });
      assert.equal(plan.section(s), '');

      s.append('step/end', { turn: 1, step: 1 });
      s.append('step/start', { turn: 1, step: 2 });
      const before = s.events().length;
      assert.deepEqual(plan.preStep(s), { appended: true }); // approval never narrates
      const committed = s.events(before)[0];
      assert.deepEqual([committed.type, committed.data], ['plan/mode', { active: false }]);
      assert.deepEqual(plan.get(s), { active: false });
      assert.deepEqual(plan.preStep(s), { appended: false });

      const queued = plan.command(s, 'look at the tests first');
      assert.equal(queued.text, 'Entering plan mode (applies from the next step). Use /plan off to leave.');
      assert.equal(queued.steer.content[0].text, 'look at the tests first');
      assert.deepEqual(plan.get(s), { active: false, pending: true });
      assert.equal(plan.command(s, 'off').text, 'Plan mode entry cancelled.');
      assert.deepEqual(plan.command(s, 'off', true), { kind: 'error', text: 'Image attachments cannot accompany /plan off.' });
      s.append('step/end', { turn: 1, step: 2 });
      s.append('turn/end', { turn: 1, reason: { kind: 'completed' } });
      assert.deepEqual(plan.set(s, false), { outcome: 'noop' });
      assert.equal(plan.set(s, true).outcome, 'committed');

      const events = s.events();
      assert.equal(h.types(events).filter((t) => t === 'plan/mode').length, 3);
      assert.deepEqual(PlanMode.project(events), { active: true, pending: false });
      assert.deepEqual(PlanMode.project(s.eventsRaw()), { active: true, pending: false });
    } finally {
      s.close();
      plan.close();
      store.close();
    }
  });
}

test('projection of a running /plan command', () => {
  const events = [{ type: 'command/run', seq: 0, time: 0, data: { commandId: 'c1', name: 'plan', args: '', source: 'user' } }];
  assert.deepEqual(PlanMode.project(events), { active: false, pending: true });
  events.push({ type: 'command/done', seq: 1, time: 0, data: { commandId: 'c1', kind: 'success' } });
  events.push({ type: 'plan/mode', seq: 2, time: 0, data: { active: true } });
  assert.deepEqual(PlanMode.project(events), { active: true, pending: false });
});

test('plan config errors', () => {
  assert.throws(
    () => new PlanMode({ section: '   ' }),
    (e) => e instanceof dsh.InvalidArgumentError && e.message === 'PlanModeConfig needs a non-empty `section`',
  );
  assert.throws(() => new PlanMode({ section: 'x', extra: 1 }), (e) => e.message.includes('unknown key'));
  assert.throws(() => PlanMode.project('{"not":"an array"}'), dsh.InvalidArgumentError);
  assert.throws(() => PlanMode.project({ not: 'an array' }), TypeError);
  assert.throws(() => new PlanMode(null), TypeError);
});
