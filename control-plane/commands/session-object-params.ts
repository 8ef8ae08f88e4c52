/**
 * `upload_session_object`'s params, apart from its command so that the body threads
 * (control-plane/bodies/body-thread.ts) check a large upload's params with the very same schema.
 */
import { z } from 'zod';
import { aliasSchema, refSchema } from '../../shared/ids.ts';

/** `value` may be any JSON value, `null` included, but must be present. */
const jsonValue = z.custom<unknown>((value) => value !== undefined, 'value is required');

export const uploadSessionObjectParams = z.strictObject({
  session_id: refSchema,
  alias: aliasSchema,
  value: jsonValue,
});
