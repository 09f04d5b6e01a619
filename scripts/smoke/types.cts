// Type check of the installed npm package from CommonJS (tsc --module nodenext).
import dsh = require('dsh-persist');

const store = dsh.Store.open({ backend: 'jsonl', root: '/tmp/never-opened' });
const seq: number = store.start({ id: 'typed' }).append('turn/start', { turn: 1 });
const err: dsh.NotFoundError = new dsh.NotFoundError(2, 'absent');
export { seq, err };
