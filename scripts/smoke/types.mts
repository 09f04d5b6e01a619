// Type check of the installed npm package from ESM (tsc --module nodenext):
// every named import resolves, append() is a number, the error classes exist.
import { Store, NotFoundError, DshIOError, Status, type SessionView } from 'dsh-persist';
import dsh from 'dsh-persist';

const store: Store = Store.open({ backend: 'sqlite', path: ':memory:' });
const s = store.start({ id: 'typed' });
const seq: number = s.append('turn/start', { turn: 1 });
const raw: number | bigint = s.appendRaw('turn/end', '{"turn":1,"reason":{"kind":"completed"}}');
s.close();
const view: SessionView = store.load('typed');
const notFound: typeof dsh.NotFoundError = NotFoundError;
const io: DshIOError | null = null;
const ok: 0 = Status.OK;
export { seq, raw, view, notFound, io, ok };
