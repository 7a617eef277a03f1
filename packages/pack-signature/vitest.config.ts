import { defineProject, mergeConfig } from 'vitest/config';
import { sharedConfig } from '../../vitest.shared.js';

export default mergeConfig(
  sharedConfig,
  // test/imports.test.ts imports the built package in a fresh Node process.
  defineProject({ test: { globalSetup: ['./test/global-setup.ts'] } }),
);
