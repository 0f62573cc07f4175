import { describe, expect, it } from 'vitest';
import { storableJson, storableText } from './json-input.ts';

describe('storableJson', () => {
  it('replaces NULs and unpaired surrogates, in values and keys, and counts them', () => {
    expect(storableJson({ 'k\u0000': ['a\u0000b', '\ud800', 'x\udc00y'] })).toEqual({
      value: { 'k\uFFFD': ['a\uFFFDb', '\uFFFD', 'x\uFFFDy'] },
      replaced: 4,
    });
  });

  it('keeps paired surrogates, escaped backslashes and text that only looks like an escape', () => {
    const value = { emoji: '😀', slash: '\\u0000', slashes: '\\\\ud800', mixed: '\\\u0000' };
    expect(storableJson(value)).toEqual({ value: { ...value, mixed: '\\\uFFFD' }, replaced: 1 });
  });

  it('takes undefined as null and leaves clean values as they are', () => {
    expect(storableJson(undefined)).toEqual({ value: null, replaced: 0 });
    expect(storableJson({ a: [1, 'b', null, true] })).toEqual({ value: { a: [1, 'b', null, true] }, replaced: 0 });
  });

  it('storableText does the same for a string', () => {
    expect(storableText('a\u0000b\ud800c😀')).toBe('a\uFFFDb\uFFFDc😀');
  });
});
