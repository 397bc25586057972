// Types of the generated profile-schema-validator.js (scripts/gen-profile-validator.mjs).
import type { ErrorObject } from 'ajv';

export interface ProfileSchemaValidator {
  (data: unknown): boolean;
  /** The first failure of the last call, or null when it passed. */
  errors?: ErrorObject[] | null;
}

export declare const validate: ProfileSchemaValidator;
export default validate;
