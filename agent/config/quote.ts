// Error messages are one line: a value read from a file or the environment
// may hold newlines or control characters, so it is shown JSON-escaped.
export const quote = (value: string): string => `'${JSON.stringify(value).slice(1, -1)}'`;
