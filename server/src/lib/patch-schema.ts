import { z } from 'zod';

/**
 * The PATCH form of a create schema: every field optional and, unlike `.partial()`, with the
 * defaults removed, so that a field left out is left unchanged rather than reset to its default.
 */
export function patchSchema<Shape extends z.ZodRawShape>(schema: z.ZodObject<Shape>) {
  const shape: Record<string, z.ZodType> = {};
  for (const [key, field] of Object.entries(schema.shape)) shape[key] = withoutDefault(field as z.ZodType).optional();
  return z
    .object(shape)
    .refine((value) => Object.values(value).some((entry) => entry !== undefined), 'nothing to change') as unknown as z.ZodType<
    Partial<z.output<z.ZodObject<Shape>>>,
    Partial<z.input<z.ZodObject<Shape>>>
  >;
}

/** A field without its default, also when a transform follows the default (`.default([]).transform(...)`). */
function withoutDefault(field: z.ZodType): z.ZodType {
  if (field instanceof z.ZodDefault) return field.unwrap() as z.ZodType;
  if (field instanceof z.ZodPipe && field.in instanceof z.ZodDefault) {
    const piped = (field.in.unwrap() as z.ZodType).pipe(field.out as z.ZodType);
    return field.description ? piped.describe(field.description) : piped;
  }
  return field;
}
