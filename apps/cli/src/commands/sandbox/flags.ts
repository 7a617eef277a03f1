import { open } from 'node:fs/promises';
import { resolve } from 'node:path';
import { readPackwardenEnv } from '@packwarden/pack-manifest';
import { CliError, EXIT } from '../../errors.js';
import type { CliIo } from '../../io.js';
import type { TrustFlags } from '../../shared/trust.js';

export interface SandboxFlags extends TrustFlags {
  agent: string;
  socket?: string;
  stdio?: boolean;
  stateDir?: string;
  workspace?: string;
  engineHome?: string;
  requireSignedPack?: boolean;
  cancelGraceMs?: string;
  isolation?: IsolationFlag;
}

export type IsolationFlag = 'required' | 'auto' | 'off';

export interface RunFlags extends TrustFlags {
  json?: boolean;
  baseUrl?: string;
  modelToken?: string;
  modelTokenFile?: string;
  model?: string;
  fileAccess?: 'none' | 'read' | 'write';
  requireSignedPack?: boolean;
  stateDir?: string;
  workspace?: string;
  isolation?: IsolationFlag;
}

/** A model token is a credential, not a document: anything longer is a mistake (the wrong file). */
const MAX_TOKEN_BYTES = 64 * 1024;

async function readBounded(
  read: (buffer: Buffer, offset: number) => Promise<number>,
): Promise<Buffer> {
  const buffer = Buffer.alloc(MAX_TOKEN_BYTES + 1);
  let length = 0;
  for (;;) {
    const n = await read(buffer, length);
    if (n === 0) break;
    length += n;
    if (length > MAX_TOKEN_BYTES)
      throw new CliError(`the model token is larger than ${MAX_TOKEN_BYTES} bytes`, EXIT.usage);
  }
  return buffer.subarray(0, length);
}

async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of process.stdin) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    length += buffer.length;
    if (length > MAX_TOKEN_BYTES)
      throw new CliError(
        `the model token on stdin is larger than ${MAX_TOKEN_BYTES} bytes`,
        EXIT.usage,
      );
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}

/**
 * The model token of `run`: `--model-token-file FILE|-` (trailing newline removed), else
 * `--model-token` (with a warning: argv is readable by every local user), else the environment.
 */
export async function modelTokenFrom(
  io: CliIo,
  flags: { modelToken?: string; modelTokenFile?: string },
  fromEnv: string | undefined,
): Promise<string | undefined> {
  if (flags.modelTokenFile !== undefined) {
    let bytes: Buffer;
    if (flags.modelTokenFile === '-') {
      bytes = await readStdin();
    } else {
      const path = resolve(io.cwd, flags.modelTokenFile);
      const file = await open(path, 'r').catch((error: Error) => {
        throw new CliError(`cannot read --model-token-file ${path}: ${error.message}`, EXIT.usage);
      });
      try {
        bytes = await readBounded(async (buffer, offset) => {
          const { bytesRead } = await file.read(buffer, offset, buffer.length - offset);
          return bytesRead;
        });
      } finally {
        await file.close();
      }
    }
    const token = bytes.toString('utf8').replace(/\r?\n$/, '');
    if (token === '' || /[\r\n]/.test(token))
      throw new CliError('--model-token-file must hold the token on one line', EXIT.usage);
    return token;
  }
  if (flags.modelToken !== undefined) {
    io.stderr.write(
      'warning: --model-token puts the token on the command line, where other local users can read it; use PACKWARDEN_MODEL_TOKEN or --model-token-file FILE|- instead\n',
    );
    return flags.modelToken;
  }
  return fromEnv;
}

const ISOLATION_MODES: readonly IsolationFlag[] = ['required', 'auto', 'off'];

/**
 * `--isolation`, else `PACKWARDEN_ISOLATION`, else `auto`. An unknown value in the environment is
 * a usage error (exit 2): a security setting never falls back silently.
 */
export function isolationMode(io: CliIo, flag: IsolationFlag | undefined): IsolationFlag {
  if (flag !== undefined) return flag;
  const value = readPackwardenEnv(io.env, 'ISOLATION');
  if (value === undefined) return 'auto';
  const mode = value.trim().toLowerCase() as IsolationFlag;
  if (!ISOLATION_MODES.includes(mode)) {
    throw new CliError(
      `PACKWARDEN_ISOLATION=${JSON.stringify(value.slice(0, 40))} is not an isolation mode`,
      EXIT.usage,
      'set it to required, auto or off, or unset it (auto)',
    );
  }
  return mode;
}
