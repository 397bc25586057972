// Types of files.mjs for the jest suites (ts-jest only transpiles; `npm run typecheck` reads these).
import type { FuzzFailure } from './run.mjs';

export declare const filesTarget: { name: string; runCase(ctx: unknown): Promise<unknown> };
export declare function pathSettings(): Array<{ key: string; env: string | undefined }>;
export declare function nulPathSweep(o: { bundle: string; tmpRoot?: string; log?: (line: string) => void }): Promise<{ settings: string[]; failures: FuzzFailure[] }>;
