import { isAbsolute, relative, resolve, sep } from 'node:path';
import * as z from 'zod';
import { EngineError } from './errors.js';

/**
 * `spec.exec` of a pack whose engine is `exec`:
 * `{ command: [program, ...args], env?: { NAME: value } }`. A program written as a relative path
 * (`./bin/engine.sh`) is resolved inside the pack; a bare name is looked up on `PATH`.
 */
export const execSpecSchema = z.object({
  command: z.array(z.string().min(1).max(4096)).min(1).max(256),
  env: z
    .record(
      z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, { message: 'must be a variable name' }),
      z.string().max(65_536),
    )
    .optional(),
});
export type ExecSpec = z.infer<typeof execSpecSchema>;

/** A validated `spec.exec` with its program resolved. */
export interface ResolvedExecSpec {
  program: string;
  args: string[];
  env: Record<string, string>;
}

/** Validates `spec.exec` (untrusted pack content) and resolves its program against the pack. */
export function parseExecSpec(value: unknown, packDir: string): ResolvedExecSpec {
  const parsed = execSpecSchema.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .map(
        (issue) =>
          `spec.exec${issue.path.length ? `.${issue.path.join('.')}` : ''}: ${issue.message}`,
      )
      .join('; ');
    throw new EngineError(
      'ERR_EXEC_SPEC_INVALID',
      `the exec engine needs spec.exec: { command: [program, ...args], env?: {…} } in agent.yaml (${issues})`,
    );
  }
  const [first, ...args] = parsed.data.command as [string, ...string[]];
  let program = first;
  if (first.startsWith('./') || first.startsWith('../')) {
    program = resolve(packDir, first);
    const rel = relative(packDir, program);
    if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) {
      throw new EngineError(
        'ERR_EXEC_SPEC_INVALID',
        `spec.exec.command[0] ${JSON.stringify(first)} must stay inside the pack`,
      );
    }
  }
  return { program, args, env: { ...(parsed.data.env ?? {}) } };
}
