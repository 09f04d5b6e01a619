'use strict';
// Argument conversion shared by the handle classes: type checks, and JSON text
// that loses nothing the core must see.

const crypto = require('node:crypto');
const { InvalidArgumentError, Status } = require('./errors');

function typeName(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** A string argument (passed to C as NUL-terminated UTF-8). */
function text(value, name) {
  if (typeof value !== 'string') throw new TypeError(`${name} must be a string, not ${typeName(value)}`);
  const nul = value.indexOf('\0');
  if (nul >= 0) {
    throw new InvalidArgumentError(Status.INVALID_ARGUMENT, `\`${name}\` contains a NUL character at index ${nul}`);
  }
  return value;
}

function optionalText(value, name) {
  return value === null || value === undefined ? null : text(value, name);
}

/**
 * JSON text of a JS value for the library. Unlike plain JSON.stringify it
 * keeps what the core must judge or keep exactly:
 * - BigInt values are written as their exact integer literal;
 * - NaN, ±Infinity and -0 are written as the tokens `NaN`, `Infinity`,
 *   `-Infinity`, `-0` (JSON.stringify would silently write `null`/`0`), so
 *   the core rejects them with its "not losslessly JSON-serializable" error.
 */
function stringify(value, name) {
  const marker = `@@dsh-raw-${crypto.randomBytes(8).toString('hex')}@@`;
  let raw = false;
  const out = JSON.stringify(value, (_key, v) => {
    if (typeof v === 'bigint') {
      raw = true;
      return marker + v.toString();
    }
    if (typeof v === 'number' && (!Number.isFinite(v) || Object.is(v, -0))) {
      raw = true;
      return marker + (Object.is(v, -0) ? '-0' : String(v));
    }
    return v;
  });
  if (out === undefined) throw new TypeError(`${name} is not JSON-serializable (${typeName(value)})`);
  if (!raw) return out;
  return out.replace(new RegExp(`"${marker}([^"]*)"`, 'g'), '$1');
}

/**
 * A JSON argument that must be an object (`array: false`) or an array
 * (`array: true`): a string is taken as JSON text as is; a value of the
 * right shape is serialized; anything else is a TypeError.
 */
function jsonArg(value, name, { array }) {
  if (typeof value === 'string') return text(value, name);
  const ok = array ? Array.isArray(value) : value !== null && typeof value === 'object' && !Array.isArray(value);
  if (!ok) {
    throw new TypeError(`${name} must be ${array ? 'an array' : 'an object'} or its JSON text, not ${typeName(value)}`);
  }
  return text(stringify(value, name), name);
}

const U64_MAX = (1n << 64n) - 1n;

/** A uint64_t argument: a non-negative safe integer Number or a BigInt. */
function uint64(value, name) {
  if (typeof value === 'bigint') {
    if (value < 0n || value > U64_MAX) {
      throw new InvalidArgumentError(Status.INVALID_ARGUMENT, `${name} must be a non-negative integer, got ${value}`);
    }
    return value;
  }
  if (typeof value !== 'number') throw new TypeError(`${name} must be a number or bigint, not ${typeName(value)}`);
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new InvalidArgumentError(
      Status.INVALID_ARGUMENT,
      `${name} must be a non-negative safe integer, got ${value}`,
    );
  }
  return value;
}

function bool(value, name) {
  if (typeof value !== 'boolean') throw new TypeError(`${name} must be a boolean, not ${typeName(value)}`);
  return value;
}

/** A uint64 result: a Number when safe, else a BigInt. */
function seqResult(value) {
  if (typeof value === 'bigint' && value <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(value);
  return value;
}

module.exports = { text, optionalText, stringify, jsonArg, uint64, bool, typeName, seqResult };
