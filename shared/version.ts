import pkg from '../package.json' with { type: 'json' };

/** The service's version, as published in package.json (runners register with it; ops shows it). */
export const VERSION: string = pkg.version;
