'use strict';
// PlanMode: the plan-mode controller (dsh_plan_*).

const { fns, callRequiredText, callHandle } = require('./lib');
const { Handle } = require('./handle');
const { Session } = require('./session');
const args = require('./args');

/**
 * Plan-mode controller configured with `{section}`. State is folded from
 * each session's log; the controller keeps only each session's pending
 * selection. Every method takes the live Session it acts on.
 */
class PlanMode extends Handle {
  /** @param {{section: string}|string} config */
  constructor(config) {
    const raw = args.jsonArg(config, 'config', { array: false });
    super(callHandle(fns.dsh_plan_new, raw), (p) => fns.dsh_plan_free(p), 'plan controller');
  }

  #call(fn, session, ...rest) {
    if (!(session instanceof Session)) {
      throw new TypeError(`session must be a Session, not ${args.typeName(session)}`);
    }
    return JSON.parse(callRequiredText(fn, this._ptr(), session._ptr(), ...rest));
  }

  /** `{active, pending?}` */
  get(session) {
    return this.#call(fns.dsh_plan_get, session);
  }

  /** `{outcome: "committed"|"queued"|"cancelled"|"noop", narration?}` */
  set(session, active) {
    return this.#call(fns.dsh_plan_set, session, args.bool(active, 'active'));
  }

  /** Call when a step is accepted: `{appended, narration?}` */
  preStep(session) {
    return this.#call(fns.dsh_plan_pre_step, session);
  }

  /** The configured prompt section when plan mode is (about to be) active, else "". */
  section(session) {
    if (!(session instanceof Session)) {
      throw new TypeError(`session must be a Session, not ${args.typeName(session)}`);
    }
    return callRequiredText(fns.dsh_plan_section, this._ptr(), session._ptr());
  }

  /** The /plan command: `{kind: "success"|"error", text, steer?}` */
  command(session, rawInput, hasAttachments = false) {
    return this.#call(fns.dsh_plan_command, session, args.text(rawInput, 'rawInput'), args.bool(hasAttachments, 'hasAttachments'));
  }

  /** exit_plan_mode tool call: `{ok: true, review}` or `{ok: false, error}` */
  exitCheck(session, planMarkdown) {
    return this.#call(fns.dsh_plan_exit_check, session, args.text(planMarkdown, 'planMarkdown'));
  }

  /** The user's review answer → `{approved: true}` or `{approved: false, error}` */
  exitAnswer(session, answer) {
    return this.#call(fns.dsh_plan_exit_answer, session, args.jsonArg(answer, 'answer', { array: false }));
  }

  /** Pure projection for UIs: `{active, pending}` from events (array or JSON text). */
  static project(events) {
    const raw = args.jsonArg(events, 'events', { array: true });
    return JSON.parse(callRequiredText(fns.dsh_plan_project, raw));
  }
}

module.exports = { PlanMode };
