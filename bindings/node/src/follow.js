'use strict';
// Follower: the events of one session as another process appends them
// (dsh_follow_*), poll style: next(timeoutMs) waits up to that long.

const { fns, call, callRequiredText } = require('./lib');
const { Handle } = require('./handle');
const args = require('./args');

/** From `store.follow(id, fromSeq?)`. Close it when done (or `using`). */
class Follower extends Handle {
  /** @param {object} ptr from dsh_follow_open */
  constructor(ptr) {
    super(ptr, (p) => call(fns.dsh_follow_close, p), 'follower');
  }

  /** JSON text of next(). */
  nextRaw(timeoutMs = 0) {
    const ms = args.uint64(timeoutMs, 'timeoutMs');
    if (Number(ms) > 0xffffffff) throw new RangeError(`timeoutMs must be at most ${0xffffffff}, got ${timeoutMs}`);
    return callRequiredText(fns.dsh_follow_next, this._ptr(), Number(ms));
  }

  /** The new events (an empty array when none came within `timeoutMs`; 0 looks once). */
  next(timeoutMs = 0) {
    return JSON.parse(this.nextRaw(timeoutMs));
  }
}

module.exports = { Follower };
