import { resolve } from 'node:path';
import { generateKeypair, signPack } from '@packwarden/pack-signature';
import { CliError, EXIT } from '../errors.js';
import { printJson, terminalSafe as safe, type CliIo } from '../io.js';
import { resolvePackArgument } from './pack-actions.js';
import { readPrivateKeyFile, writePrivateKeyFile } from './key-file.js';

export interface KeygenFlags {
  kid?: string;
  output: string;
  force?: boolean;
  json?: boolean;
}

export async function packKeygen(io: CliIo, flags: KeygenFlags): Promise<number> {
  const keypair = await generateKeypair(flags.kid === undefined ? {} : { kid: flags.kid });
  const file = resolve(io.cwd, flags.output);
  await writePrivateKeyFile(file, keypair.privateKeyPem, flags.force === true);
  const jwks = { keys: [keypair.publicJwk] };
  if (flags.json) {
    printJson(io, {
      kid: keypair.kid,
      privateKeyFile: file,
      publicKeyPem: keypair.publicKeyPem,
      publicJwk: keypair.publicJwk,
      thumbprint: keypair.thumbprint,
    });
    return EXIT.ok;
  }
  io.stdout.write(
    [
      `Wrote the private key to ${file} (mode 0600). Keep it secret; sign with:`,
      `  packwarden pack sign <pack> --key ${flags.output} --kid ${keypair.kid}`,
      '',
      `kid:        ${keypair.kid}`,
      `thumbprint: ${keypair.thumbprint}   (RFC 7638; verifiers pin this with --pin)`,
      '',
      'Public key (PEM):',
      keypair.publicKeyPem.trimEnd(),
      '',
      'Public key (JWK):',
      JSON.stringify(keypair.publicJwk),
      '',
      'Publish it, in any of these ways:',
      `  • a keys file for verifiers:  {"${keypair.kid}": "<the PEM above>"}  →  packwarden pack verify <pack> --keys FILE`,
      `  • a JWKS at a URL you serve:  ${JSON.stringify(jwks)}`,
      `      →  packwarden pack verify <pack> --jwks https://… --pin ${keypair.thumbprint}`,
      '  • the control plane:          POST the JWK to <control plane>/api/keys; fleets set PACKWARDEN_LEASE_URL',
      '',
    ].join('\n'),
  );
  return EXIT.ok;
}

export interface SignFlags {
  key: string;
  kid: string;
  fileList: boolean;
  json?: boolean;
}

export async function packSign(io: CliIo, ref: string, flags: SignFlags): Promise<number> {
  const privateKeyPem = await readPrivateKeyFile(resolve(io.cwd, flags.key));
  const { dir } = await resolvePackArgument(io, ref);
  let signed;
  try {
    signed = await signPack(dir, { privateKeyPem, kid: flags.kid, fileList: flags.fileList });
  } catch (error) {
    const code = (error as { code?: string }).code ?? '';
    // A bad key or kid is the operator's configuration, not the pack's fault.
    if (/KEY|KID/.test(code))
      throw new CliError((error as Error).message, EXIT.usage, undefined, {
        code: 'ERR_CLI_SIGNING_KEY',
        cause: error,
      });
    throw error;
  }
  const { payload } = signed;
  if (flags.json) {
    printJson(io, {
      file: signed.file,
      dir,
      kid: flags.kid,
      pack: { name: payload.pack, version: payload.packVersion },
      digest: payload.digest,
      digestAlg: payload.digestAlg,
      iat: payload.iat,
      fileList: payload.files !== undefined,
    });
    return EXIT.ok;
  }
  // The folder signed is always named: a bare name may be an installed pack, not a folder here.
  io.stdout.write(
    `signed ${safe(`${payload.pack}@${payload.packVersion}`)} with ${safe(flags.kid)}\n  folder ${safe(dir)}\n  digest ${payload.digest}\n  wrote  ${safe(signed.file)}` +
      `${payload.files === undefined ? ' (without a file list)' : ` (with the list of ${payload.files.length} files)`}\n`,
  );
  return EXIT.ok;
}
