import { describe, expect, it } from 'vitest';
import { editedArguments, editModal, type FlatSchema, SLACK_FIELD_MAX } from './slack-modals.ts';

const metadata = { a: '00000000-0000-4000-8000-000000000000', t: 'call_1', kind: 'edit' as const };
const schema: FlatSchema = [
  { name: 'title', type: 'string', required: true },
  { name: 'content', type: 'string', required: true },
  { name: 'pages', type: 'integer', required: false },
];
const state = (values: Record<string, string>) =>
  Object.fromEntries(Object.entries(values).map(([block, value]) => [block, { value: { value } }]));
const inputs = (view: any) => view.blocks.filter((block: any) => block.type === 'input').map((block: any) => block.block_id);
const notes = (view: any) =>
  view.blocks.filter((block: any) => block.type === 'context').map((block: any) => block.elements[0].text as string);

describe('the Slack edit modal', () => {
  it('offers each field that fits a Slack input, and a why', () => {
    const view = editModal(metadata, 'generateDocument', { title: 'Order 42', content: '# Order', pages: 2 }, schema);
    expect(inputs(view)).toEqual(['arg:title', 'arg:content', 'arg:pages', 'why']);
    expect(view.submit).toMatchObject({ text: 'Approve' });
    expect(
      editedArguments(state({ 'arg:title': 'Order 43', 'arg:content': '# Order', 'arg:pages': '3', why: 'typo' }), schema, {}),
    ).toEqual({ arguments: { title: 'Order 43', content: '# Order', pages: 3 } });
  });

  it('keeps a value too long for a field, and arguments the schema does not name, as they are', () => {
    const content = 'x'.repeat(SLACK_FIELD_MAX + 1);
    const current = { title: 'Order 42', content, extra: { keep: true } };
    const view = editModal(metadata, 'generateDocument', current, schema);
    expect(inputs(view)).toEqual(['arg:title', 'arg:pages', 'why']);
    expect(notes(view)).toEqual([
      '`content`: 3,001 characters, more than a Slack field holds: kept as it is',
      "Kept as they are (not in the tool's schema): `extra`",
    ]);
    expect(editedArguments(state({ 'arg:title': 'Order 43', 'arg:pages': '' }), schema, current)).toEqual({
      arguments: { title: 'Order 43', content, extra: { keep: true } },
    });
    // A value that fits to the character is offered whole.
    const fits = editModal(metadata, 'generateDocument', { title: 'T', content: 'y'.repeat(SLACK_FIELD_MAX) }, schema);
    expect((fits as any).blocks.find((block: any) => block.block_id === 'arg:content').element.initial_value).toHaveLength(
      SLACK_FIELD_MAX,
    );
  });

  it('shows arguments too long as JSON without a way to submit them cut', () => {
    const long = { items: Array.from({ length: 400 }, (_, index) => ({ sku: `SKU-${index}` })) };
    const view = editModal(metadata, 'createOrder', long, undefined);
    expect(inputs(view)).toEqual([]);
    expect(view.submit).toBeUndefined();
    expect(view.close).toMatchObject({ text: 'Close' });
    expect(notes(view)[0]).toMatch(/^These arguments are [\d,]+ characters of JSON, more than a Slack field holds/);
    const short = editModal(metadata, 'createOrder', { items: [] }, undefined);
    expect(inputs(short)).toEqual(['arguments', 'why']);
  });

  it('says which fields are not of their type, in those fields', () => {
    expect(editedArguments(state({ 'arg:title': 'T', 'arg:content': 'C', 'arg:pages': '2.5' }), schema, {})).toEqual({
      errors: { 'arg:pages': 'a whole number' },
    });
  });
});
