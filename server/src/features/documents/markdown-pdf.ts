import { marked, type Token, type Tokens } from 'marked';
import pdfmake from 'pdfmake';

// PDF's standard fonts, built into pdfkit: no font files to ship or read.
const FONTS = {
  Helvetica: { normal: 'Helvetica', bold: 'Helvetica-Bold', italics: 'Helvetica-Oblique', bolditalics: 'Helvetica-BoldOblique' },
  Courier: { normal: 'Courier', bold: 'Courier-Bold', italics: 'Courier-Oblique', bolditalics: 'Courier-BoldOblique' },
};
const STANDARD_FONT_NAMES = new Set(Object.values(FONTS).flatMap((family) => Object.values(family)));
pdfmake.setFonts(FONTS);
// A document is built from the agent's Markdown only: no URL is fetched and no local file is read
// (pdfmake asks this policy for font names too; only the built-in ones pass).
pdfmake.setUrlAccessPolicy(() => false);
pdfmake.setLocalAccessPolicy((path: string) => STANDARD_FONT_NAMES.has(path));

type Inline = { text: string | Inline[]; bold?: boolean; italics?: boolean; font?: string; link?: string; decoration?: string; color?: string };
type Block = Record<string, unknown> | string;

const SAFE_LINK = /^(https?:|mailto:)/i;

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
        runs.push({ ...marks, text: (token as Tokens.Codespan).text, font: 'Courier' });
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
        else runs.push({ ...marks, text: decodeEntities((token as { text?: string }).text ?? token.raw) });
    }
  }
  return runs;
}

function decodeEntities(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|#39);/g, (_, entity: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[entity]!);
}

function blocks(tokens: Token[]): Block[] {
  const out: Block[] = [];
  for (const token of tokens) {
    switch (token.type) {
      case 'heading': {
        const heading = token as Tokens.Heading;
        out.push({ text: inline(heading.tokens), style: `h${Math.min(heading.depth, 4)}` });
        break;
      }
      case 'paragraph':
        out.push({ text: inline((token as Tokens.Paragraph).tokens), style: 'paragraph' });
        break;
      case 'text':
        out.push({ text: inline((token as Tokens.Text).tokens ?? [{ type: 'text', raw: token.raw, text: (token as Tokens.Text).text } as Token]), style: 'paragraph' });
        break;
      case 'list': {
        const list = token as Tokens.List;
        const items = list.items.map((item) => ({ stack: blocks(item.tokens) }));
        out.push(list.ordered ? { ol: items, start: typeof list.start === 'number' ? list.start : 1, style: 'list' } : { ul: items, style: 'list' });
        break;
      }
      case 'table': {
        const table = token as Tokens.Table;
        const header = table.header.map((cell) => ({ text: inline(cell.tokens), bold: true, fillColor: '#eeeeee' }));
        const rows = table.rows.map((row) => row.map((cell) => ({ text: inline(cell.tokens) })));
        out.push({ table: { headerRows: 1, widths: table.header.map(() => '*'), body: [header, ...rows] }, style: 'table' });
        break;
      }
      case 'code':
        out.push({ text: (token as Tokens.Code).text, style: 'code', preserveLeadingSpaces: true });
        break;
      case 'blockquote':
        out.push({ stack: blocks((token as Tokens.Blockquote).tokens), style: 'quote' });
        break;
      case 'hr':
        out.push({ canvas: [{ type: 'line', x1: 0, y1: 0, x2: 515, y2: 0, lineWidth: 0.5, lineColor: '#999999' }], margin: [0, 6, 0, 6] });
        break;
      case 'html':
        out.push({ text: (token as Tokens.HTML).text, style: 'paragraph' });
        break;
      default:
        break; // space
    }
  }
  return out;
}

/** Renders Markdown to a PDF without a browser: marked's lexer mapped onto pdfmake. */
export async function markdownToPdf(title: string, markdown: string): Promise<Buffer> {
  const definition = {
    info: { title, creator: 'Agent Platform' },
    pageSize: 'A4',
    pageMargins: [40, 48, 40, 48],
    defaultStyle: { font: 'Helvetica', fontSize: 10.5, lineHeight: 1.25 },
    content: [{ text: title, style: 'title' }, ...blocks(marked.lexer(markdown, { gfm: true }))],
    styles: {
      title: { fontSize: 20, bold: true, margin: [0, 0, 0, 12] },
      h1: { fontSize: 17, bold: true, margin: [0, 10, 0, 6] },
      h2: { fontSize: 14.5, bold: true, margin: [0, 10, 0, 5] },
      h3: { fontSize: 12.5, bold: true, margin: [0, 8, 0, 4] },
      h4: { fontSize: 11, bold: true, margin: [0, 6, 0, 3] },
      paragraph: { margin: [0, 0, 0, 6] },
      list: { margin: [0, 0, 0, 6] },
      table: { margin: [0, 4, 0, 8] },
      code: { font: 'Courier', fontSize: 9, background: '#f4f4f4', margin: [0, 2, 0, 8] },
      quote: { italics: true, color: '#555555', margin: [12, 2, 0, 8] },
    },
  };
  return (await pdfmake.createPdf(definition as never).getBuffer()) as Buffer;
}
