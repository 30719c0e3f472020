/** The parsed flags of the commands, shared by the command flows and the prompts. */

/** The flags of `service-api apikey`, as strings after parsing. */
export interface ApikeyFlags {
  create?: boolean;
  delete?: boolean;
  list?: boolean;
  name?: string;
  description?: string;
  roles?: string;
  permissions?: string;
  overwrite?: boolean;
  json?: boolean;
}
