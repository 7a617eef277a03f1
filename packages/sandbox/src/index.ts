// @packwarden/sandbox: the sandbox service and the confinement of pack code.
export const SANDBOX_PACKAGE = '@packwarden/sandbox';
