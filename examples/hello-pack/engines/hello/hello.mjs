// The example pack's engine (AgentHippo Custom Engine V2, the emitter's positional calls of
// the contract). It needs no model: it greets, lists the workspace through a tool call, and
// writes hello.txt only when the turn's permissions allow writing to the workspace.
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export class HelloEngine {
  async run(turn) {
    const { emitter, message, workspaceRoot, permissions, agent, signal } = turn;
    await emitter.progress(`${agent.id}@${agent.version} is thinking (no model needed)`);
    for (const word of `Hello! You said: "${message}".\n`.split(/(?<= )/)) {
      if (signal?.aborted) return;
      await emitter.text(word);
    }

    await emitter.toolStart('list_workspace', JSON.stringify({ path: '.' }), 'list-1');
    const entries = (await readdir(workspaceRoot, { withFileTypes: true }))
      .map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name))
      .sort();
    await emitter.toolEnd('list_workspace', 'list-1', JSON.stringify({ entries }), false);
    await emitter.text(
      `Your workspace holds ${entries.length} ${entries.length === 1 ? 'entry' : 'entries'}${entries.length > 0 ? `: ${entries.join(', ')}` : ''}.\n`,
    );

    const access = permissions.fileAccess;
    if (access === 'workspace-write' || access === 'full') {
      await emitter.toolStart('write_file', JSON.stringify({ path: 'hello.txt' }), 'write-1');
      await writeFile(
        join(workspaceRoot, 'hello.txt'),
        `Hello from ${agent.id}! You said: ${message}\n`,
      );
      await emitter.toolEnd('write_file', 'write-1', 'wrote hello.txt', false);
      await emitter.text('I wrote hello.txt in your workspace.\n');
    } else {
      await emitter.text(`I did not write hello.txt: file access is "${access}".\n`);
    }
    await emitter.done();
    return { nativeSessionId: `hello-${Date.now().toString(36)}` };
  }
}
