import { z } from 'zod';

/**
 * The PATCH form of a create schema: every field optional and, unlike `.partial()`, with the
 * defaults removed, so that a field left out is left unchanged rather than reset to its default.
 */
export function patchSchema<Shape extends z.ZodRawShape>(schema: z.ZodObject<Shape>) {
  const shape: Record<string, z.ZodType> = {};
  for (const [key, field] of Object.entries(schema.shape)) {
    const inner = field instanceof z.ZodDefault ? (field.unwrap() as z.ZodType) : (field as z.ZodType);
    shape[key] = inner.optional();
  }
  return z
    .object(shape)
    .refine((value) => Object.values(value).some((entry) => entry !== undefined), 'nothing to change') as unknown as z.ZodType<
    Partial<z.output<z.ZodObject<Shape>>>,
    Partial<z.input<z.ZodObject<Shape>>>
  >;
}
