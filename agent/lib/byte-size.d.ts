/** "512 B", "4.5 MiB", "839 MiB", "1.2 GiB": binary (IEC) units, one decimal under 10. */
export function formatBytes(n: number): string;
/** "4.5 MiB/s". */
export function formatRate(bytesPerSecond: number): string;
