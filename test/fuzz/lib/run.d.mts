// Types of run.mjs for the jest suites (ts-jest only transpiles; `npm run typecheck` reads these).
export interface FuzzProblem {
  cat: 'crash' | 'hang' | 'wrong';
  sig: string;
  msg: string;
}
export interface FuzzFailure {
  caseNo: number;
  problems: FuzzProblem[];
  desc: string[];
  error?: unknown;
}
export interface FuzzGroup {
  sig: string;
  cat: string;
  cases: number;
  first: number;
  example: string;
}
export interface FuzzResult {
  target: string;
  seed: number;
  cases: number;
  crashes: number;
  hangs: number;
  wrong: number;
  errors: number;
  failures: FuzzFailure[];
  groups: FuzzGroup[];
  summary: string;
}
export interface FuzzRunOptions {
  target: 'answers' | 'files' | 'media' | 'localapi';
  bundle: string;
  fakeCloud?: string;
  seed: number;
  cases?: number;
  only?: number;
  deadline?: number;
  jobs?: number;
  tmpRoot?: string;
  log?: (line: string) => void;
  verbose?: boolean;
  replayExtra?: string;
  /** Asked before each case: true ends the run (Ctrl-C). */
  stop?: () => boolean;
}
export declare const TARGETS: Record<string, unknown>;
export declare function runTarget(o: FuzzRunOptions): Promise<FuzzResult>;
export declare function freshSeed(): number;
export declare function replayCommand(target: string, seed: number, caseNo: number, extra?: string): string;
export declare function groupFailures(failures: FuzzFailure[]): FuzzGroup[];
export declare function killAll(): Promise<void>;
