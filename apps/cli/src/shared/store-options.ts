import type { Command } from 'commander';

export interface StoreFlags {
  store?: string;
  json?: boolean;
}

/** `--store` and `--json`, which every store command takes. */
export const storeOption = (command: Command) =>
  command
    .option('--store <url>', 'the store index URL or folder')
    .option('--json', 'print a JSON document');
