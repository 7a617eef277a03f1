import { StoreError } from './errors.js';

interface Known {
  kind: 'file' | 'directory';
  explicit: boolean;
  spelled: string;
}

/**
 * Every path an archive has named so far, by folded key, so that duplicates, file/directory
 * confusion and case or NFC collisions are refused before anything is written.
 */
export class PathRegistry {
  private readonly known = new Map<string, Known>();

  /** Registers an entry; returns the directories it brings into being (to create, in order). */
  add(segments: string[], kind: 'file' | 'directory', fold: (s: string) => string): string[][] {
    const created: string[][] = [];
    let key = '';
    let spelled = '';
    for (let i = 0; i < segments.length; i++) {
      const segment = segments[i]!;
      key = i === 0 ? fold(segment) : `${key}/${fold(segment)}`;
      spelled = i === 0 ? segment : `${spelled}/${segment}`;
      const last = i === segments.length - 1;
      const existing = this.known.get(key);
      if (!existing) {
        this.known.set(key, { kind: last ? kind : 'directory', explicit: last, spelled });
        if (!last || kind === 'directory') created.push(segments.slice(0, i + 1));
        continue;
      }
      if (existing.spelled !== spelled) {
        throw new StoreError(
          'ERR_ARCHIVE_PATH_COLLISION',
          `${JSON.stringify(spelled)} collides with ${JSON.stringify(existing.spelled)} (same name ignoring case or Unicode normalisation)`,
          { subject: spelled },
        );
      }
      if (!last) {
        if (existing.kind === 'file') {
          throw new StoreError(
            'ERR_ARCHIVE_PATH_COLLISION',
            `${JSON.stringify(spelled)} is a file and also a directory`,
            { subject: spelled },
          );
        }
        continue;
      }
      if (kind === 'directory' && existing.kind === 'directory' && !existing.explicit) {
        existing.explicit = true;
        continue;
      }
      throw new StoreError(
        'ERR_ARCHIVE_PATH_COLLISION',
        existing.kind === kind
          ? `${JSON.stringify(spelled)} appears twice in the archive`
          : `${JSON.stringify(spelled)} is a file and also a directory`,
        { subject: spelled },
      );
    }
    return created;
  }
}
