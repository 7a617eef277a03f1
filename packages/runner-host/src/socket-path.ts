import { RunnerHostError } from './errors.js';

/**
 * Bytes of a unix socket path the kernel takes whole: `sun_path` is 108 bytes on Linux and 104
 * on macOS and the BSDs, one of which is kept for the terminating NUL.
 *
 * Node does not refuse a longer path: it cuts it to `sun_path`'s size and binds or connects to
 * that shorter name, which can lie in another folder (a path whose cut falls inside a folder
 * name names a file beside that folder, e.g. in `/tmp`). A server would then listen where
 * nobody asked, with the process umask's mode; a client would hand its run frame, model token
 * included, to whoever planted a socket at the cut name.
 */
export const MAX_SOCKET_PATH_BYTES = process.platform === 'linux' ? 107 : 103;

/** Throws `ERR_SOCKET_PATH` for a path the kernel would not take whole (see above). */
export function assertSocketPathFits(path: string, what: string): void {
  const bytes = Buffer.byteLength(path);
  if (bytes > MAX_SOCKET_PATH_BYTES) {
    throw new RunnerHostError(
      'ERR_SOCKET_PATH',
      `${what} ${path} is ${bytes} bytes long, over the ${MAX_SOCKET_PATH_BYTES} bytes a unix socket path may have; use a shorter path`,
    );
  }
}
