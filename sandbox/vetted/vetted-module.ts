/** One module of the vetted set: plain ES module source without imports of its own. */
export interface VettedModule {
  readonly name: string;
  readonly version: string;
  readonly description: string;
  readonly source: string;
}
