// Vitest 4 no longer reads this file on its own; the root vitest.config.ts passes it on as
// `test.projects`, so the list of test projects lives in one place.
export const projects = ['packages/*', 'apps/*'];
export default projects;
