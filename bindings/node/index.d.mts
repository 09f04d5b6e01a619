// Types of the ESM entry (index.mjs): the names of index.d.ts, and the whole
// module as the default export.
export * from './index.js';
import * as dsh from './index.js';
export default dsh;
