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
 * Throws InvalidArgumentError unless `value` is a JSON value the library
 * stores exactly, like the original's boundary: null, booleans, strings,
 * finite numbers other than -0, BigInt (kept as its exact integer text),
 * dense arrays and plain objects of those. `undefined`, functions, symbols,
 * NaN/±Infinity, -0, Map/Set/Date and other class instances, and cycles are
 * refused with "… not losslessly JSON-serializable …", naming `what` and the
 * offending path.
 */
function assertJsonValue(value, what) {
  const refuse = (path, reason) => {
    throw new InvalidArgumentError(
      Status.INVALID_ARGUMENT,
      `${what} is not losslessly JSON-serializable because it contains non-JSON-serializable data: ${path} is ${reason}`,
    );
  };
  const open = new Set();
  const stack = [[value, '(value)', false]];
  while (stack.length > 0) {
    const [v, path, leave] = stack.pop();
    if (leave) {
      open.delete(v);
      continue;
    }
    switch (typeof v) {
      case 'string':
      case 'boolean':
      case 'bigint':
        continue;
      case 'number':
        if (!Number.isFinite(v)) refuse(path, String(v));
        if (Object.is(v, -0)) refuse(path, '-0');
        continue;
      case 'undefined':
        refuse(path, 'undefined');
        break;
      case 'function':
        refuse(path, 'a function');
        break;
      case 'symbol':
        refuse(path, 'a symbol');
        break;
      default:
        break;
    }
    if (v === null) continue;
    if (open.has(v)) refuse(path, 'a cycle');
    const proto = Object.getPrototypeOf(v);
    if (Array.isArray(v)) {
      if (proto !== Array.prototype) refuse(path, 'an array subclass');
      open.add(v);
      stack.push([v, path, true]);
      for (let i = v.length - 1; i >= 0; i -= 1) {
        if (!(i in v)) refuse(`${path}[${i}]`, 'a hole');
        stack.push([v[i], `${path}[${i}]`, false]);
      }
      continue;
    }
    if (proto !== Object.prototype && proto !== null) {
      refuse(path, `a ${v.constructor && v.constructor.name ? v.constructor.name : 'non-plain object'}`);
    }
    open.add(v);
    stack.push([v, path, true]);
    const keys = Object.keys(v);
    for (let i = keys.length - 1; i >= 0; i -= 1) {
      const k = keys[i];
      stack.push([v[k], path === '(value)' ? k : `${path}.${k}`, false]);
    }
  }
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
function jsonArg(value, name, { array, what } = {}) {
  if (typeof value === 'string') return text(value, name);
  const ok = array ? Array.isArray(value) : value !== null && typeof value === 'object' && !Array.isArray(value);
  if (!ok) {
    throw new TypeError(`${name} must be ${array ? 'an array' : 'an object'} or its JSON text, not ${typeName(value)}`);
  }
  if (what) {
    for (const [i, item] of value.entries()) {
      const type = item !== null && typeof item === 'object' && typeof item.type === 'string' ? item.type : '?';
      assertJsonValue(item, `${what} (event ${JSON.stringify(type)} at index ${i})`);
    }
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

module.exports = { text, optionalText, stringify, jsonArg, assertJsonValue, uint64, bool, typeName, seqResult };
