/**
 * Small files are written in the background while the archive is read on: this bounds how many
 * such writes (and how many of their bytes) are in flight, and keeps the first failure to be
 * thrown at the next `throttle` or `rethrow`.
 */
export class WritePool {
  private readonly inFlight = new Set<Promise<void>>();
  private inFlightBytes = 0;
  private failure: unknown;

  constructor(
    private readonly maxTasks: number,
    private readonly maxBytes: number,
  ) {}

  /** Runs `task` (holding `size` bytes) in the background; its failure is kept, not thrown. */
  track(task: Promise<void>, size: number): void {
    this.inFlightBytes += size;
    const settle = (): void => {
      this.inFlight.delete(tracked);
      this.inFlightBytes -= size;
    };
    const tracked = task.then(settle, (error: unknown) => {
      settle();
      this.failure ??= error;
    });
    this.inFlight.add(tracked);
  }

  /** Waits until there is room for one more write, then throws the first failure, if any. */
  async throttle(): Promise<void> {
    while (this.inFlight.size >= this.maxTasks || this.inFlightBytes > this.maxBytes) {
      await Promise.race(this.inFlight);
    }
    this.rethrow();
  }

  /** Throws the first failure of a background write, if any. */
  rethrow(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  /** Waits for every write still running, whatever it ends with. */
  async settle(): Promise<void> {
    await Promise.allSettled(this.inFlight);
  }
}
