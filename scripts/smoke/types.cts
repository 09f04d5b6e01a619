// Type check of the installed npm package from CommonJS (tsc --module nodenext).
import dsh = require('dsh-persist');

const store = dsh.Store.open({ backend: 'jsonl', root: '/tmp/never-opened' });
const seq: number = store.start({ id: 'typed' }).append('turn/start', { turn: 1 });
const err: dsh.NotFoundError = new dsh.NotFoundError(2, 'absent');
// Every backend's configuration type-checks (not opened).
const configs: dsh.StoreConfig[] = [
  { backend: 'jsonl', root: '/r', compression: 'none', maxLogBytes: 1 << 30 },
  { backend: 'sqlite', path: '/s.db', journalMode: 'wal', maxRecordBytes: 1 << 28 },
  { backend: 'postgres', url: 'postgresql://u@h/d', schema: 'dsh', sslMode: 'verify-full', cacheDir: '/home/u/.cache/dsh' },
];
export { seq, err, configs };
