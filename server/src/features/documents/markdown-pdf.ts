import { marked, type Token, type Tokens } from 'marked';
import pdfmake from 'pdfmake';
import { isRightToLeft, setLinesInReadingOrder } from './bidi-lines.ts';
import { DocumentTooComplexError } from './document-errors.ts';
import { type Face, FONT_FILES, FONTS, FontFallback, type FontName } from './fonts.ts';
import { keepWithNext } from './keep-with-next.ts';
import { BODY_FONT_SIZE, BODY_LINE_SPACING, TEXT_WIDTH, tableBlocks } from './markdown-table.ts';
import { breakLongWords, type Inline, type Run, textBlock } from './text-pieces.ts';

pdfmake.setFonts(FONTS);
setLinesInReadingOrder();
// A document is built from the agent's Markdown only: no URL is fetched and no local file is read
// but the fonts' (pdfmake asks this policy for every file it opens).
pdfmake.setUrlAccessPolicy(() => false);
pdfmake.setLocalAccessPolicy((path: string) => FONT_FILES.has(path));

type Block = Record<string, unknown> | string;

const SAFE_LINK = /^(https?:|mailto:)/i;

/** Blockquote markers beyond this depth on a line are dropped (marked recurses once per nesting level). */
const MAX_QUOTE_DEPTH = 8;

// Code's face has no U+200B: the break opportunities breakLongWords adds are set in the text face (setFaces).
const monoRun = (text: string, marks: Omit<Inline, 'text'> = {}): Inline => ({
  ...marks,
  text: breakLongWords(text),
  font: 'Mono',
});
const DEEP_QUOTE = new RegExp(`^((?: {0,3}>){${MAX_QUOTE_DEPTH}})(?: {0,3}>)+`, 'gm');

function inline(tokens: Token[] | undefined, marks: Omit<Inline, 'text'> = {}): Inline[] {
  const runs: Inline[] = [];
  for (const token of tokens ?? []) {
    switch (token.type) {
      case 'strong':
        runs.push(...inline((token as Tokens.Strong).tokens, { ...marks, bold: true }));
        break;
      case 'em':
        runs.push(...inline((token as Tokens.Em).tokens, { ...marks, italics: true }));
        break;
      case 'del':
        runs.push(...inline((token as Tokens.Del).tokens, { ...marks, decoration: 'lineThrough' }));
        break;
      case 'codespan':
        runs.push(monoRun((token as Tokens.Codespan).text, marks));
        break;
      case 'link': {
        const link = token as Tokens.Link;
        const target = SAFE_LINK.test(link.href) ? { link: link.href, color: '#1a56db', decoration: 'underline' } : {};
        runs.push(...inline(link.tokens, { ...marks, ...target }));
        break;
      }
      case 'image': {
        const image = token as Tokens.Image;
        runs.push({ ...marks, text: `[image: ${image.text || image.href}]`, italics: true });
        break;
      }
      case 'br':
        runs.push({ ...marks, text: '\n' });
        break;
      default:
        if ('tokens' in token && token.tokens?.length) runs.push(...inline(token.tokens, marks));
        else runs.push({ ...marks, text: breakLongWords(decodeEntities((token as { text?: string }).text ?? token.raw)) });
    }
  }
  return runs;
}

function decodeEntities(text: string): string {
  return text.replace(
    /&(amp|lt|gt|quot|#39);/g,
    (_, entity: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[entity]!,
  );
}

/**
 * A list read from the right. pdfmake sets a list's markers on the left: here each item starts with
 * its marker as text ("• ", "3. "), which the line's reordering sets on the right, indented from the right.
 */
function rightToLeftList(items: Block[][], start: number | undefined): Block {
  const marked = items.map((item, index) => {
    const marker = start === undefined ? '• ' : `${start + index}. `;
    const [first, ...rest] = item;
    // The list's direction is its items' (an item in Latin letters too): UAX #9's higher-level protocol.
    const stack =
      typeof first === 'object' && Array.isArray(first.text)
        ? [{ ...first, text: [{ text: marker }, ...first.text], direction: 'rtl' }, ...rest]
        : [{ text: marker, direction: 'rtl' }, ...item];
    return { stack, margin: [0, 0, 12, 0] };
  });
  return { stack: marked, style: 'list' };
}
const RIGHT_TO_LEFT_QUOTE_MARGIN = [0, 2, 12, 8];

function blocks(tokens: Token[]): Block[] {
  const out: Block[] = [];
  for (const token of tokens) {
    switch (token.type) {
      case 'heading': {
        const heading = token as Tokens.Heading;
        out.push(textBlock(inline(heading.tokens), `h${Math.min(heading.depth, 4)}`));
        break;
      }
      case 'paragraph':
        out.push(textBlock(inline((token as Tokens.Paragraph).tokens), 'paragraph'));
        break;
      case 'text':
        out.push(
          textBlock(
            inline(
              (token as Tokens.Text).tokens ?? [{ type: 'text', raw: token.raw, text: (token as Tokens.Text).text } as Token],
            ),
            'paragraph',
          ),
        );
        break;
      case 'list': {
        const list = token as Tokens.List;
        const start = typeof list.start === 'number' ? list.start : 1;
        const itemBlocks = list.items.map((item) => blocks(item.tokens));
        const items = itemBlocks.map((stack) => ({ stack }));
        if (isRightToLeft(list.raw)) out.push(rightToLeftList(itemBlocks, list.ordered ? start : undefined));
        else out.push(list.ordered ? { ol: items, start, style: 'list' } : { ul: items, style: 'list' });
        break;
      }
      case 'table':
        out.push(...tableBlocks(token as Tokens.Table, inline));
        break;
      case 'code':
        out.push(textBlock([monoRun((token as Tokens.Code).text)], 'code', { preserveLeadingSpaces: true }));
        break;
      case 'blockquote':
        out.push({
          stack: blocks((token as Tokens.Blockquote).tokens),
          style: 'quote',
          ...(isRightToLeft(token.raw) && { margin: RIGHT_TO_LEFT_QUOTE_MARGIN }),
        });
        break;
      case 'hr':
        out.push({
          canvas: [{ type: 'line', x1: 0, y1: 0, x2: TEXT_WIDTH, y2: 0, lineWidth: 0.5, lineColor: '#999999' }],
          margin: [0, 6, 0, 6],
        });
        break;
      case 'html':
        out.push(textBlock([{ text: breakLongWords((token as Tokens.HTML).text) }], 'paragraph'));
        break;
      default:
        break; // space
    }
  }
  return out;
}

/** A rendered document, and the characters it shows as empty boxes because their face has no glyph. */
export interface RenderedDocument {
  pdf: Buffer;
  missingCharacters: string[];
}

/**
 * Renders Markdown to a PDF without a browser: marked's lexer mapped onto pdfmake. CPU-bound for
 * large input: the service calls it in a worker thread (render-pool.ts), never on the main thread.
 */
export async function markdownToPdf(title: string, markdown: string): Promise<RenderedDocument> {
  try {
    return await render(title, markdown);
  } catch (error) {
    // marked and pdfmake recurse once per nesting level: what is still too deep overflows the stack.
    if (error instanceof RangeError)
      throw new DocumentTooComplexError('The document is nested too deeply to lay out: flatten its lists and quotes');
    throw error;
  }
}

const STYLES: Record<string, Record<string, unknown>> = {
  title: { fontSize: 20, bold: true, margin: [0, 0, 0, 12] },
  h1: { fontSize: 17, bold: true, margin: [0, 10, 0, 6] },
  h2: { fontSize: 14.5, bold: true, margin: [0, 10, 0, 5] },
  h3: { fontSize: 12.5, bold: true, margin: [0, 8, 0, 4] },
  h4: { fontSize: 11, bold: true, margin: [0, 6, 0, 3] },
  paragraph: { margin: [0, 0, 0, 6] },
  list: { margin: [0, 0, 0, 6] },
  table: { margin: [0, 4, 0, 8] },
  tablePart: { fontSize: 9, italics: true, color: '#555555', margin: [0, 4, 0, 0] },
  code: { font: 'Mono', fontSize: 9, background: '#f4f4f4', margin: [0, 2, 0, 8] },
  quote: { italics: true, color: '#555555', margin: [12, 2, 0, 8] },
};
const DEFAULT_STYLE = { font: 'Sans' as FontName, fontSize: BODY_FONT_SIZE, lineHeight: BODY_LINE_SPACING };

/** The same words, whatever their case and spacing. */
const sameWords = (a: string, b: string) => {
  const words = (text: string) => text.trim().replace(/\s+/g, ' ').toLowerCase();
  return words(a) === words(b);
};

async function render(title: string, markdown: string): Promise<RenderedDocument> {
  const fallback = new FontFallback();
  const tokens = marked.lexer(markdown.replace(DEEP_QUOTE, '$1'), { gfm: true });
  // Content that opens with the title as its first heading (as a model often writes it) shows it once, as the title.
  const first = tokens.find((token) => token.type !== 'space');
  const repeatsTitle = first?.type === 'heading' && first.depth === 1 && sameWords(first.text, title);
  const blocksOfText = keepWithNext([
    { text: breakLongWords(title), style: 'title' },
    ...blocks(repeatsTitle ? tokens.filter((token) => token !== first) : tokens),
  ]);
  const content = setFaces(blocksOfText, { font: DEFAULT_STYLE.font, bold: false, italics: false }, fallback);
  const definition = {
    info: { title, creator: 'Agent Platform' },
    pageSize: 'A4',
    pageMargins: [40, 48, 40, 48],
    defaultStyle: DEFAULT_STYLE,
    content,
    styles: STYLES,
  };
  const pdf = (await pdfmake.createPdf(definition as never).getBuffer()) as Buffer;
  return { pdf, missingCharacters: fallback.missing() };
}

/**
 * Each text of the content set in faces that have its characters (FontFallback.faced), from the face pdfmake
 * would set it in: its styles' and parents' font, bold, italics. A text no one face has is split.
 */
function setFaces(node: unknown, inherited: Face, fallback: FontFallback): unknown {
  if (typeof node === 'string') {
    const faced = fallback.faced(node, inherited);
    return typeof faced === 'string' ? faced : { text: faced };
  }
  if (Array.isArray(node)) return node.map((child) => setFaces(child, inherited, fallback));
  if (typeof node !== 'object' || node === null) return node;
  const block = node as Record<string, unknown> & { table?: { body: unknown } };
  const face = faceOf(block, inherited);
  if (block.text !== undefined) block.text = inlineFaces(block.text as string | Run[], face, fallback);
  for (const key of ['stack', 'ul', 'ol'] as const)
    if (block[key] !== undefined) block[key] = setFaces(block[key], face, fallback);
  if (block.table) block.table.body = setFaces(block.table.body, face, fallback);
  return block;
}

/**
 * A text's runs, each split where its face lacks characters. pdfmake flattens nested runs without
 * their marks, so a run's pieces are runs beside each other, each with the run's marks.
 */
function inlineFaces(text: string | Run[], face: Face, fallback: FontFallback): string | Run[] {
  if (typeof text === 'string') return fallback.faced(text, face);
  return text.flatMap((run): Run[] => {
    if (typeof run === 'string') return [fallback.faced(run, face)].flat();
    if (typeof run.text !== 'string') return [{ ...run, text: inlineFaces(run.text, faceOf(run, face), fallback) }];
    const faced = fallback.faced(run.text, faceOf(run, face));
    return typeof faced === 'string' ? [run] : faced.map((piece) => ({ ...run, ...piece }));
  });
}

/** The face of a node: its styles' font, bold and italics over its parent's, and its own over those. */
function faceOf(node: Record<string, unknown>, inherited: Face): Face {
  let face = inherited;
  for (const source of [...[node.style ?? []].flat().map((name) => STYLES[name as string] ?? {}), node])
    face = {
      font: (source.font as FontName | undefined) ?? face.font,
      bold: (source.bold as boolean | undefined) ?? face.bold,
      italics: (source.italics as boolean | undefined) ?? face.italics,
    };
  return face;
}
