import { ociError } from './errors.js';

/** One challenge of a `WWW-Authenticate` header, reduced to what the registry auth flows use. */
export type AuthChallenge =
  | { scheme: 'basic'; realm?: string }
  | { scheme: 'bearer'; realm: string; service?: string; scope?: string };

// RFC 7235 §2.1 / RFC 9110 §11: challenge = auth-scheme [ 1*SP #auth-param ];
// auth-param = token BWS "=" BWS ( token / quoted-string ). token68 forms are not used by
// registries and are refused. Several challenges may share one header (comma-separated, which
// is also how fetch joins repeated headers).
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+/;

interface RawChallenge {
  scheme: string;
  params: Map<string, string>;
}

function parseRaw(header: string): RawChallenge[] {
  const fail = (why: string): never => {
    throw ociError(
      'ERR_OCI_AUTH_CHALLENGE_INVALID',
      `the registry's WWW-Authenticate challenge does not parse (${why})`,
    );
  };
  const challenges: RawChallenge[] = [];
  let i = 0;
  const skipSpaces = () => {
    while (header[i] === ' ' || header[i] === '\t') i++;
  };
  const readToken = (): string | undefined => {
    const m = TOKEN.exec(header.slice(i));
    if (!m) return undefined;
    i += m[0].length;
    return m[0];
  };
  skipSpaces();
  while (i < header.length) {
    const scheme = readToken();
    if (!scheme) return fail(`expected an auth scheme at offset ${i}`);
    const current: RawChallenge = { scheme: scheme.toLowerCase(), params: new Map() };
    challenges.push(current);
    skipSpaces();
    // Parameters until the end or the start of the next challenge (a token not followed by "=").
    for (;;) {
      if (i >= header.length) break;
      if (header[i] === ',') {
        i++;
        skipSpaces();
        continue;
      }
      const save = i;
      const name = readToken();
      if (!name) return fail(`expected a parameter at offset ${i}`);
      skipSpaces();
      if (header[i] !== '=') {
        i = save;
        break;
      }
      i++;
      skipSpaces();
      let value: string;
      if (header[i] === '"') {
        i++;
        let out = '';
        for (;;) {
          if (i >= header.length) return fail('an unterminated quoted string');
          const c = header[i]!;
          if (c === '"') {
            i++;
            break;
          }
          if (c === '\\') {
            if (i + 1 >= header.length) return fail('an unterminated quoted string');
            out += header[i + 1];
            i += 2;
            continue;
          }
          if (c.charCodeAt(0) < 0x20 && c !== '\t') return fail('a control character');
          out += c;
          i++;
        }
        value = out;
      } else {
        const token = readToken();
        if (token === undefined) return fail(`a parameter without a value at offset ${i}`);
        value = token;
      }
      const key = name.toLowerCase();
      if (current.params.has(key)) return fail(`the parameter ${key} appears twice`);
      current.params.set(key, value);
      skipSpaces();
      if (i < header.length && header[i] !== ',') return fail(`unexpected text at offset ${i}`);
    }
  }
  if (challenges.length === 0) fail('it is empty');
  return challenges;
}

/**
 * The challenge to answer: Bearer (the distribution token flow) when offered, else Basic.
 * Throws `ERR_OCI_AUTH_CHALLENGE_INVALID` for a header that does not parse, a Bearer challenge
 * without a realm, or only schemes this client does not speak.
 */
export function parseAuthChallenge(header: string, maxLength = 4096): AuthChallenge {
  if (header.length > maxLength) {
    throw ociError(
      'ERR_OCI_AUTH_CHALLENGE_INVALID',
      `the registry's WWW-Authenticate challenge is longer than ${maxLength} characters`,
    );
  }
  const challenges = parseRaw(header);
  const bearer = challenges.find((c) => c.scheme === 'bearer');
  if (bearer) {
    const realm = bearer.params.get('realm');
    if (!realm) {
      throw ociError(
        'ERR_OCI_AUTH_CHALLENGE_INVALID',
        'the registry asked for a Bearer token without naming its realm',
      );
    }
    const service = bearer.params.get('service');
    const scope = bearer.params.get('scope');
    return {
      scheme: 'bearer',
      realm,
      ...(service !== undefined ? { service } : {}),
      ...(scope !== undefined ? { scope } : {}),
    };
  }
  const basic = challenges.find((c) => c.scheme === 'basic');
  if (basic) {
    const realm = basic.params.get('realm');
    return { scheme: 'basic', ...(realm !== undefined ? { realm } : {}) };
  }
  throw ociError(
    'ERR_OCI_AUTH_CHALLENGE_INVALID',
    `the registry asked for ${challenges.map((c) => c.scheme).join(', ')} authentication; only Basic and Bearer are supported`,
  );
}
