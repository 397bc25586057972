// Types for test/cli/bundle.ts, which builds a private copy of the agent bundle.
import type { BuildOptions } from 'esbuild';

export declare const BUNDLE_BUDGET_BYTES: number;
export declare const root: string;
export declare const commonOptions: BuildOptions;
export declare function builtinProfiles(): Record<string, string>;
export declare function agentOptions(outfile: string): BuildOptions;
