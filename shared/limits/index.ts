/** The limits library: the catalog as data, resolution, override validation and refusals. */
export * from './catalog.ts';
export * from './resolve.ts';
export * from './overrides.ts';
export * from './limit-object.ts';
export * from './load-overrides.ts';
