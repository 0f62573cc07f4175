// biome-ignore lint/suspicious/noExplicitAny: an OpenAPI document is walked as untyped JSON.
type Json = Record<string, any>;

/**
 * What the route schemas cannot say to @fastify/swagger, said on the finished document:
 * - a body whose schema has a default may be left out (the server reads none as the default);
 * - `x-binary-response: <media type>` on a route: its 200 answer is that media type, not JSON;
 * - the input variants (`FooInput`) that zod's converter makes of every named schema are left out
 *   where nothing refers to them (named schemas that no route uses, like CallbackEvent, stay).
 */
export function finishOpenApiDocument<T extends Json>(document: T): T {
  for (const item of Object.values<Json>(document.paths ?? {})) {
    for (const operation of Object.values<Json>(item)) {
      const body = operation?.requestBody;
      if (body && Object.values<Json>(body.content ?? {}).some((media) => media.schema?.default !== undefined))
        body.required = false;
      const binary = operation?.['x-binary-response'];
      if (typeof binary === 'string') {
        delete operation['x-binary-response'];
        operation.responses = {
          200: { description: `The file (${binary})`, content: { [binary]: { schema: { type: 'string', format: 'binary' } } } },
          ...operation.responses,
        };
      }
    }
  }
  const schemas: Json | undefined = document.components?.schemas;
  if (schemas) {
    // Until none is left: an input variant used only by an unused one goes too.
    for (let dropped = true; dropped; ) {
      dropped = false;
      const text = JSON.stringify(document);
      for (const name of Object.keys(schemas)) {
        if (
          name.endsWith('Input') &&
          schemas[name.slice(0, -'Input'.length)] &&
          !text.includes(`"#/components/schemas/${name}"`)
        ) {
          delete schemas[name];
          dropped = true;
        }
      }
    }
  }
  return document;
}
