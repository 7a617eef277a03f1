import type { Command } from 'commander';
import type { CommandContext } from '../../context.js';
import { addExamples } from '../../help.js';
import {
  installOptions,
  storeOption,
  type InstallFlags,
  type StoreFlags,
} from '../../shared/install-options.js';

const STORE_HELP = `
The store is --store URL, else PACKWARDEN_STORE_URL (or AGENTHIPPO_STORE_URL), else the
AgentHippo store. A static store is an index.json from \`packwarden store build\`, over https://
(http:// on loopback only), file:// or a plain path; which kind a store is comes from its index.`;

const TYPE_HELP = 'only artifacts of this type: pack, skill, mcp or engine';

export function registerStoreCommands(program: Command, { io, state }: CommandContext): void {
  const store = program
    .command('store')
    .description('Browse pack stores, install from them, build your own')
    .addHelpText('after', STORE_HELP);

  addExamples(
    storeOption(store.command('list').description('List the artifacts in the store'))
      .argument('[repository]', 'oci://HOST[:PORT]/REPO: list its tags')
      .option('--type <type>', TYPE_HELP)
      .option('--plain-http', 'oci:// over plain HTTP (loopback registries only)'),
    [
      'packwarden store list --type pack',
      'packwarden store list --store ./public/store --json',
      'packwarden store list oci://ghcr.io/acme/my-pack   # its tags',
    ],
  ).action(async (repository: string | undefined, options: StoreFlags & { type?: string }) => {
    if (repository !== undefined) {
      const { ociList } = await import('./oci.js');
      state.exitCode = await ociList(io, repository, options);
      return;
    }
    const { storeList } = await import('./browse.js');
    state.exitCode = await storeList(io, undefined, options);
  });

  addExamples(
    storeOption(
      store.command('search').description('Search the store by slug, name, description and tags'),
    )
      .argument('<query>', 'words to look for')
      .option('--type <type>', TYPE_HELP),
    ['packwarden store search review', "packwarden store search 'code review' --type pack --json"],
  ).action(async (query: string, options: StoreFlags & { type?: string }) => {
    const { storeList } = await import('./browse.js');
    state.exitCode = await storeList(io, query, options);
  });

  addExamples(
    storeOption(store.command('info').description('Show one artifact and its versions'))
      .argument(
        '<ref>',
        '<type>/<slug>[@<version>], e.g. pack/code-reviewer, or oci://HOST/REPO[:TAG]',
      )
      .option('--plain-http', 'oci:// over plain HTTP (loopback registries only)'),
    [
      'packwarden store info pack/code-reviewer --json',
      'packwarden store info oci://ghcr.io/acme/my-pack:1.2.0',
    ],
  ).action(async (ref: string, options: StoreFlags & { plainHttp?: boolean }) => {
    if (ref.startsWith('oci://')) {
      const { ociInfo } = await import('./oci.js');
      state.exitCode = await ociInfo(io, ref, options);
      return;
    }
    const { storeInfo } = await import('./browse.js');
    state.exitCode = await storeInfo(io, ref, options);
  });

  addExamples(
    installOptions(
      store
        .command('install')
        .description('Install a pack into $PACKWARDEN_HOME/agents/<slug>/<version>, atomically')
        .argument(
          '[ref]',
          '<type>/<slug>[@<version>], e.g. pack/code-reviewer@1.2.0, a local .tgz (./x.tgz) or oci://… (required unless --frozen: then every pack of the lock when omitted)',
        ),
    ),
    [
      'packwarden store install pack/code-reviewer@1.2.0 --lock packwarden.lock',
      'packwarden store install --frozen --lock packwarden.lock   # exactly what the lock lists',
      'packwarden store install ./my-pack-1.0.0.tgz --require-signed --keys release.keys.json',
    ],
  ).action(async (ref: string | undefined, options: InstallFlags) => {
    if (options.lock !== undefined || options.frozen) {
      const { lockedInstall } = await import('./lock.js');
      state.exitCode = await lockedInstall(io, ref, options);
      return;
    }
    if (ref === undefined) {
      const { CliError, EXIT } = await import('../../errors.js');
      throw new CliError('store install needs a <ref> (or --frozen --lock FILE)', EXIT.usage);
    }
    if (ref.startsWith('oci://')) {
      const { ociInstall } = await import('./oci.js');
      state.exitCode = await ociInstall(io, ref, options);
      return;
    }
    const { storeInstall } = await import('./install.js');
    state.exitCode = await storeInstall(io, ref, options);
  });

  addExamples(
    store
      .command('push')
      .description("Push a pack to an OCI registry (the tag defaults to the pack's version)")
      .argument('<pack>', 'pack path or installed pack name')
      .argument('<ref>', 'oci://HOST[:PORT]/REPO[:TAG]')
      .option('--plain-http', 'plain HTTP (loopback registries only)')
      .option('--json', 'print a JSON document')
      .addHelpText(
        'after',
        '\nCredentials: $DOCKER_CONFIG/config.json (default ~/.docker/config.json) `auths`.\nExit codes: 0 pushed, 1 refused by the registry, 2 usage, reference or auth problem.',
      ),
    [
      "packwarden store push ./my-pack oci://ghcr.io/acme/my-pack   # tag = the pack's version",
      'packwarden store push ./my-pack oci://127.0.0.1:5000/my-pack:dev --plain-http --json',
    ],
  ).action(async (pack: string, ref: string, options: { plainHttp?: boolean; json?: boolean }) => {
    const { storePush } = await import('./oci.js');
    state.exitCode = await storePush(io, pack, ref, options);
  });

  addExamples(
    store
      .command('build')
      .description(
        'Write a static store (index.json + reproducible .tar.gz archives) from a folder of packs',
      )
      .argument('<packs-dir>', 'a folder whose subfolders are packs (each with agent.yaml)')
      .requiredOption('--out <dir>', 'where to write the store')
      .option(
        '--base-url <url>',
        'absolute URL the archives will be served from (default: relative URLs)',
      )
      .option('--json', 'print a JSON document'),
    [
      'packwarden store build ./agent-packs --out ./public/store',
      'packwarden store build ./agent-packs --out ./public/store --base-url https://packs.example.com/store/',
    ],
  ).action(async (packsDir: string, options: { out: string; baseUrl?: string; json?: boolean }) => {
    const { storeBuild } = await import('./build.js');
    state.exitCode = await storeBuild(io, packsDir, options);
  });
}
