import { PDFParse } from 'pdf-parse';
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createUser, signIn } from '../../../test/helpers/factories.ts';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';

let app: TestApp;
beforeAll(async () => {
  // The render deadline (30 s by default) is tested on its own below: here a heavy render on busy cores
  // (four times its usual time in a CI run beside other tests) must end, not beat the clock.
  app = await startTestApp({ DOCUMENT_RENDER_TIMEOUT_SECONDS: '600' });
});
afterAll(async () => app?.close());

const MARKDOWN = [
  '# Findings',
  '',
  'Revenue grew **12%** in the _north_, see [the dashboard](https://example.com/dash).',
  '',
  '| Region | Total |',
  '|---|---|',
  '| North | 4,200 |',
  '| South | 3,100 |',
  '',
  '```ts',
  'const answer = computeAnswer(42);',
  '```',
  '',
  '1. first step',
  '2. second step',
  '',
  '> A quoted remark',
  '',
  '![tracker](http://169.254.169.254/latest/meta-data)',
].join('\n');

/** Where A4's right margin is: 595 points wide, margins of 40 (and half a point for rounding). */
const RIGHT_MARGIN = 595 - 40 + 0.5;

/** Every text a PDF draws, with its page and position, as pdfjs reads them. */
async function placedTexts(pdf: Buffer) {
  const parsed = await getDocument({ data: new Uint8Array(pdf) }).promise;
  const items: Array<{ page: number; text: string; x: number; y: number; width: number }> = [];
  try {
    for (let number = 1; number <= parsed.numPages; number++)
      for (const item of (await (await parsed.getPage(number)).getTextContent()).items)
        if ('str' in item && item.str.trim() !== '')
          items.push({ page: number, text: item.str, x: item.transform[4], y: item.transform[5], width: item.width });
  } finally {
    await parsed.destroy();
  }
  return items;
}

describe('generateDocument and documents', () => {
  it('renders Markdown to a PDF whose text has the title, a table cell and a code line; members download it', async () => {
    const { org, admin, token } = await createTenant(app);
    const { documentId } = await app.container.services.documents.generate(
      org.id,
      { title: 'Quarterly Report', content: MARKDOWN },
      { userId: admin.id },
    );

    const response = await app.request('GET', `/orgs/${org.slug}/documents/${documentId}`, { token });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/pdf');
    expect(response.headers.get('content-disposition')).toBe('attachment; filename="Quarterly Report.pdf"');
    const pdf = Buffer.from(await response.arrayBuffer());
    expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
    const { text } = await new PDFParse({ data: pdf }).getText();
    for (const expected of [
      'Quarterly Report',
      'Findings',
      'North',
      '4,200',
      'const answer = computeAnswer(42);',
      'second step',
      'A quoted remark',
      '[image: tracker]',
    ]) {
      expect(text).toContain(expected);
    }

    const guest = await createUser(app, { org: org.slug });
    const list = await (await app.request('GET', `/orgs/${org.slug}/documents`, { token: await signIn(app, guest) })).json();
    expect(list.documents).toEqual([
      expect.objectContaining({
        id: documentId,
        title: 'Quarterly Report',
        createdByUserId: admin.id,
        sizeBytes: pdf.length,
        actionId: null,
        agentName: null,
      }),
    ]);
  });

  it('keeps the text of other scripts than Western European: Greek, Cyrillic, Central European, symbols, in body, bold and code', async () => {
    const { org, admin } = await createTenant(app);
    const lines = [
      'Ελληνικά: επιστροφή χρημάτων',
      'Русский: возврат средств',
      'Čeština, Polski: zażółć gęślą jaźń, Türkçe: İade',
      'Symbols: 30.00 € → 25.00 €, ≤ 100, ✓, “quotes”',
    ];
    const { documentId } = await app.container.services.documents.generate(
      org.id,
      { title: 'Возврат — Επιστροφή', content: `${lines[0]}\n\n**${lines[1]}**\n\n_${lines[2]}_\n\n\`${lines[3]}\`\n` },
      { userId: admin.id },
    );
    const pdf = await app.container.services.documents.download(org.id, documentId);
    const { text } = await new PDFParse({ data: pdf.pdf }).getText();
    for (const expected of ['Возврат — Επιστροφή', ...lines]) expect(text).toContain(expected);
  });

  it('sets Chinese, Japanese, Korean, Thai, Hindi and emoji in the Noto faces that have them, Arabic in italics upright, Hebrew in code in the text face', async () => {
    const { org } = await createTenant(app);
    const lines = [
      'ご注文ありがとうございます。退款将在三个工作日内处理。',
      '환불 요청이 접수되었습니다.',
      'ภาษาไทย: คืนเงินแล้ว',
      'Done 🎉 👍🏽 🦀',
      'हिन्दी: आपका रिफ़ंड स्वीकृत हो गया है।',
    ];
    const content = `${lines[0]}\n\n**${lines[1]}**\n\n${lines[2]}\n\n${lines[3]}\n\n${lines[4]}\n\n_italic عربي 中文_\n\n\`code עברית\`\n`;
    const result = await app.container.services.documents.generate(org.id, { title: '返金 Refund 환불', content });
    expect(result).toEqual({ documentId: expect.any(String) });

    const { pdf } = await app.container.services.documents.download(org.id, result.documentId);
    const { text } = await new PDFParse({ data: pdf }).getText();
    // Devanagari is read back in the order it is drawn (a vowel sign before its consonant): one word without one.
    for (const expected of ['返金 Refund 환불', ...lines.slice(0, 3), 'Done', 'आपका', 'italic', '中文', 'code', 'עברית'])
      expect(text).toContain(expected);
    // Each face embedded (as a subset), bold where the text is bold: Korean only in the title and in bold,
    // Chinese in the title (bold) and in italics (upright: Noto has no italics).
    const embedded = new Set(pdf.toString('latin1').match(/(?<=\/BaseFont \/[A-Z]{6}\+)[\w-]+/g));
    expect([...embedded].sort()).toEqual([
      'DejaVuSans',
      'DejaVuSans-Bold',
      'DejaVuSans-Oblique',
      'DejaVuSansMono',
      'NotoEmoji-Regular',
      'NotoSansDevanagari-Regular',
      'NotoSansKR-Bold',
      'NotoSansSC-Bold',
      'NotoSansSC-Regular',
      'NotoSansThai-Regular',
    ]);
  });

  it('sets right-to-left text in reading order: words from the right, numbers and Latin inside left to right, brackets mirrored, tables from the right', async () => {
    const { org } = await createTenant(app);
    const content = [
      'مرحبا بالعالم الجميل',
      'שלום עולם יפה',
      'رقم الطلب 1234 تمت الموافقة (اليوم) من Acme Corp بنجاح.',
      'The refund (رقم الطلب 1234) was approved.',
      '| المنتج | السعر |\n|---|---|\n| قهوة | 30 |',
      '- الكمية: اثنان\n- Globex',
    ].join('\n\n');
    const { documentId } = await app.container.services.documents.generate(org.id, { title: 'Refunds', content });
    const { pdf } = await app.container.services.documents.download(org.id, documentId);
    const items = await placedTexts(pdf);
    const lineOf = (word: string) => {
      const { y } = items.find((item) => item.text === word)!;
      return items.filter((item) => Math.abs(item.y - y) < 1).toSorted((a, b) => a.x - b.x);
    };
    // Left to right as seen: a paragraph whose first letter is right to left reads from the right, flush right.
    const arabic = lineOf('مرحبا');
    expect(arabic.map((item) => item.text)).toEqual(['الجميل', 'بالعالم', 'مرحبا']);
    expect(arabic.at(-1)!.x + arabic.at(-1)!.width).toBeCloseTo(RIGHT_MARGIN - 0.5, 0);
    expect(lineOf('שלום').map((item) => item.text)).toEqual(['יפה', 'עולם', 'שלום']);
    // The mirrored brackets are drawn as they are seen: "(اليوم)" read from the right opens on the right.
    expect(lineOf('Acme').map((item) => item.text)).toEqual([
      'بنجاح.',
      'Acme',
      'Corp',
      'من',
      ')اليوم(',
      'الموافقة',
      'تمت',
      '1234',
      'الطلب',
      'رقم',
    ]);
    expect(lineOf('refund').map((item) => item.text)).toEqual([
      'The',
      'refund',
      '(',
      '1234',
      'الطلب',
      'رقم',
      ')',
      'was',
      'approved.',
    ]);
    // Words never overlap, and one space (about 3 points) parts them.
    for (const line of [lineOf('Acme'), lineOf('refund')])
      for (const [index, item] of line.entries())
        if (index > 0) expect(item.x - (line[index - 1]!.x + line[index - 1]!.width)).toBeLessThan(4.5);
    // The table's first column on the right, its cells flush right.
    const [price, product] = lineOf('المنتج');
    expect([price!.text, product!.text]).toEqual(['السعر', 'المنتج']);
    expect(lineOf('قهوة').map((item) => item.text)).toEqual(['30', 'قهوة']);
    // A list whose first item starts right to left: its markers on the right, each item flush right.
    expect(lineOf('اثنان').map((item) => item.text)).toEqual(['اثنان', 'الكمية:', '•']);
    const latinItem = lineOf('Globex');
    expect(latinItem.map((item) => item.text)).toEqual(['Globex', '•']);
    expect(latinItem.at(-1)!.x + latinItem.at(-1)!.width).toBeGreaterThan(RIGHT_MARGIN - 20);
  });

  it('tells the model which characters no font has and show as empty boxes; long code words break without boxes', async () => {
    const { org } = await createTenant(app);
    const longWord = 'a'.repeat(120);
    // U+1D5A0 is in DejaVu Sans' regular face but in none of the bold ones.
    const covered = `Ελληνικά, русский, عربي, 𝖠, ✓, 😀\n\n\`${longWord}\`\n\n\`\`\`\n${longWord}\n\`\`\`\n\n${longWord}\n`;
    expect(await app.container.services.documents.generate(org.id, { title: 'Covered', content: covered })).toEqual({
      documentId: expect.any(String),
    });

    const lacking = `Order བོད 注文\n\n| **𝖠** |\n|---|\n| မြန်မာ |\n\n\`\`\`\n${longWord} ދ\n\`\`\`\n`;
    const result = await app.container.services.documents.generate(org.id, { title: 'བོད Refund', content: lacking });
    expect(result).toEqual({
      documentId: expect.any(String),
      // Each once, in order of code point: Tibetan from the title and the text alike, Thaana, Myanmar.
      missingCharacters: ['ދ', 'ད', 'བ', 'ོ', 'န', 'မ', 'ာ', '်', 'ြ', '𝖠'],
      note: expect.stringContaining('ြ (U+103C), 𝖠 (U+1D5A0). Where they matter, write them another way'),
    });
    expect(result.note).toMatch(/^Shown as empty boxes: none of the document's fonts .*: ދ \(U\+078B\), ད \(U\+0F51\)/);
  });

  it('sets a paragraph of thousands of words, Latin or Chinese, in pieces without losing or repeating one', async () => {
    const { org } = await createTenant(app);
    const latin = Array.from({ length: 5_000 }, (_, index) => `w${index}`);
    const chinese = Array.from({ length: 3_000 }, (_, index) => `文${index}`);
    const content = `${latin.join(' ')}\n\n${chinese.join('')}\n`;
    const { documentId } = await app.container.services.documents.generate(org.id, { title: 'Long', content });
    const { pdf } = await app.container.services.documents.download(org.id, documentId);
    const { text } = await new PDFParse({ data: pdf }).getText();
    expect(text.match(/w\d+/g)).toEqual(latin);
    // A line may break between a Chinese character and the digits after it.
    expect(
      text
        .replace(/-- \d+ of \d+ --/g, '')
        .replace(/\s+/g, '')
        .match(/文\d+/g),
    ).toEqual(chinese);
  });

  it('keeps a table inside the right margin when a cell holds a long word (a hash): each column gets its share of the page', async () => {
    const { org } = await createTenant(app);
    const hash = `sha256:${'f'.repeat(64)}`;
    const { documentId } = await app.container.services.documents.generate(org.id, {
      title: 'Checksums',
      content: `| File | Checksum | Size | Owner | Checked |\n|---|---|---|---|---|\n| a.zip | ${hash} | 12 KB | ops | yes |\n`,
    });
    const { pdf } = await app.container.services.documents.download(org.id, documentId);
    const items = await placedTexts(pdf);
    expect(items.map((item) => item.text)).toEqual(expect.arrayContaining(['Checked', 'yes']));
    // A4 is 595 points wide, with margins of 40: no text ends past 555 (star columns all grew to the
    // hash's width, and the last ones were set off the page).
    for (const item of items) expect(item.x + item.width).toBeLessThanOrEqual(RIGHT_MARGIN);
  });

  it('sets a table of many columns in parts of at most 10 columns that repeat the first one, so that no letters overlap', async () => {
    const { org } = await createTenant(app);
    const weeks = Array.from({ length: 39 }, (_, index) => `Week ${index + 1}`);
    const row = (name: string) => `| ${name} | ${weeks.map((_, index) => `${(index * 7) % 100}`).join(' | ')} |`;
    const content = [`| Region | ${weeks.join(' | ')} |`, `|${'---|'.repeat(40)}`, row('North'), row('South')].join('\n');
    const { documentId } = await app.container.services.documents.generate(org.id, { title: 'Weekly totals', content });
    const { pdf } = await app.container.services.documents.download(org.id, documentId);
    const items = await placedTexts(pdf);
    const { text } = await new PDFParse({ data: pdf }).getText();
    for (const label of [
      'Columns 1–9 of 40',
      'Columns 1 and 10–17 of 40',
      'Columns 1 and 26–33 of 40',
      'Columns 1 and 34–40 of 40',
    ])
      expect(text).toContain(label);
    // The first column (its header and the rows' names) heads each of the five parts.
    for (const name of ['Region', 'North', 'South']) expect(items.filter((item) => item.text === name)).toHaveLength(5);
    // No two texts on one line overlap, and none ends past the right margin.
    const lines = Map.groupBy(items, (item) => `${item.page}:${item.y.toFixed(1)}`);
    for (const line of lines.values()) {
      const sorted = line.toSorted((a, b) => a.x - b.x);
      for (const [index, item] of sorted.entries()) {
        expect(item.x + item.width).toBeLessThanOrEqual(RIGHT_MARGIN);
        if (index > 0) expect(item.x).toBeGreaterThanOrEqual(sorted[index - 1]!.x + sorted[index - 1]!.width);
      }
    }
  });

  it('never ends a page with a heading, a heading and its subheading, or a table header: each starts the next page with what follows', async () => {
    const { org } = await createTenant(app);
    // Sections of different lengths, so that some heading falls at the foot of some page: a paragraph
    // under each, every third a subsection, every fourth a table.
    const sentence = 'The quarter closed with orders above plan in every region we serve. ';
    const content = Array.from({ length: 90 }, (_, index) => {
      const section = [`## Section ${index}`];
      if (index % 3 === 0) section.push(`### Part ${index}`);
      if (index % 4 === 0) section.push(`| Item ${index} | Qty |\n|---|---|\n| Row ${index} | ${index} |\n| Next ${index} | 1 |`);
      else section.push(`Body ${index}. ${sentence.repeat((index % 7) + 1)}`);
      return section.join('\n\n');
    }).join('\n\n');
    const { documentId } = await app.container.services.documents.generate(org.id, { title: 'Quarterly review', content });
    const { pdf } = await app.container.services.documents.download(org.id, documentId);
    // pdfjs reads each word as a text of its own: each page's words, in the order they are drawn.
    const pages = [...Map.groupBy(await placedTexts(pdf), (item) => item.page).values()].map((words) =>
      words.map((word) => word.text).join(' '),
    );
    expect(pages.length).toBeGreaterThan(5);
    // What a page draws last is the end of a paragraph or a table's row, never a heading or a header.
    for (const [index, page] of pages.entries())
      expect(page, `page ${index + 1}`).not.toMatch(/(?:(?:Section|Part) \d+|Item \d+ Qty)$/);
    // Nothing is lost on the way: every heading and every row is drawn once.
    const all = pages.join(' ');
    for (const index of [0, 1, 44, 89]) expect(all.match(new RegExp(`Section ${index} `, 'g'))).toHaveLength(1);
    expect(all.match(/Next \d+ 1/g)).toHaveLength(23);
  });

  it('keeps a heading on the page of a table whose header runs to several lines, wherever the heading falls', async () => {
    const { org } = await createTenant(app);
    const sentence = 'The quarter closed with orders above plan in every region we serve. ';
    const header = Array.from({ length: 5 }, (_, column) => `Column ${column} under a long and descriptive heading`).join(' | ');
    const content = Array.from({ length: 60 }, (_, index) =>
      [
        `Body ${index}. ${sentence.repeat((index % 9) + 1)}`,
        `## Costs ${index}`,
        `| ${header} |\n|${'---|'.repeat(5)}\n| a${index} | b | c | d | e |`,
      ].join('\n\n'),
    ).join('\n\n');
    const { documentId } = await app.container.services.documents.generate(org.id, { title: 'Costs', content });
    const { pdf } = await app.container.services.documents.download(org.id, documentId);
    const pages = [...Map.groupBy(await placedTexts(pdf), (item) => item.page).values()].map((words) =>
      words.map((word) => word.text).join(' '),
    );
    expect(pages.length).toBeGreaterThan(10);
    for (const [index, page] of pages.entries()) expect(page, `page ${index + 1}`).not.toMatch(/Costs \d+$/);
    expect(pages.join(' ').match(/a\d+ b c d e/g)).toHaveLength(60);
  });

  it('stores and draws NUL and unpaired surrogates in the title and content as U+FFFD, never failing on them', async () => {
    const { org } = await createTenant(app);
    const result = await app.container.services.documents.generate(org.id, {
      title: 'Nul\u0000 here',
      content: 'before\u0000after, lone \uD800 and \uDC00 halves, `code\u0000`',
    });
    expect(result).toEqual({ documentId: expect.any(String) });
    const { pdf, filename } = await app.container.services.documents.download(org.id, result.documentId);
    expect(filename).toBe('Nul\uFFFD here.pdf');
    const { text } = await new PDFParse({ data: pdf }).getText();
    for (const expected of ['Nul\uFFFD here', 'before\uFFFDafter, lone \uFFFD and \uFFFD halves, code\uFFFD'])
      expect(text).toContain(expected);
  });

  it('is downloaded under its title in UTF-8, with no character that would disguise the saved name', async () => {
    const { org, token } = await createTenant(app);
    const download = async (title: string) => {
      const { documentId } = await app.container.services.documents.generate(org.id, { title, content: 'x' });
      const response = await app.request('GET', `/orgs/${org.slug}/documents/${documentId}`, { token });
      expect(response.status).toBe(200);
      return response.headers.get('content-disposition');
    };
    expect(await download('Rapport d’activité')).toBe(
      'attachment; filename="Rapport d_activit_.pdf"; filename*=UTF-8\'\'Rapport%20d%E2%80%99activit%C3%A9.pdf',
    );
    // A right-to-left override (U+202E) would show what follows it reversed in the saved name; a slash, a folder.
    expect(await download('invoice\u202Efdp.exe / Q3')).toBe('attachment; filename="invoice_fdp.exe _ Q3.pdf"');
  });

  it('refuses empty or oversized input', async () => {
    const { org } = await createTenant(app);
    await expect(app.container.services.documents.generate(org.id, { title: '', content: 'x' })).rejects.toThrow(/title/);
    await expect(app.container.services.documents.generate(org.id, { title: 'x', content: 'y'.repeat(200_001) })).rejects.toThrow(
      /content/,
    );
  });

  it('renders pathological Markdown off the main thread: /healthz is answered while a long render runs, and each render ends', async () => {
    const { org } = await createTenant(app);
    const inputs = {
      'one 199,000-character word': 'x'.repeat(199_000),
      '100k "[" and 99k "]"': '['.repeat(100_000) + ']'.repeat(99_000),
      'a 90,000-line code block': `\`\`\`\n${'a\n'.repeat(90_000)}\`\`\``,
      'a 40,000-character word': 'y'.repeat(40_000),
      // Each character a word (pdfmake's work per block grows with the square of its words).
      'a paragraph of 199,000 Chinese characters': '文'.repeat(199_000),
      // A face for each character: 199,000 runs, half of them in Noto Sans SC.
      '99,500 alternations of Latin and Chinese': 'a文'.repeat(99_500),
      'a heading and a table cell of 99,000 Chinese characters each': `# ${'文'.repeat(99_000)}\n\n| a |\n|---|\n| ${'文'.repeat(99_000)} |`,
      '5,000 nested quotes': `${'> '.repeat(5_000)}deep`,
      // Each heading bound to the line under it; and a run of headings taller than any page, of which only
      // the last three move together (pdfmake would show only the first page of a block taller than one).
      '12,000 headings, each over one line': Array.from({ length: 12_000 }, (_, index) => `## H${index}\n\nline\n`).join('\n'),
      '20,000 headings in a row, then a line': `${'## H\n\n'.repeat(20_000)}line\n`,
    };
    for (const [name, content] of Object.entries(inputs)) {
      let slowest = 0;
      let answered = 0;
      let rendering = true;
      const probe = (async () => {
        while (rendering) {
          const started = performance.now();
          expect((await app.request('GET', '/healthz')).status).toBe(200);
          if (rendering) answered++;
          slowest = Math.max(slowest, performance.now() - started);
        }
      })();
      const started = performance.now();
      const { documentId } = await app.container.services.documents
        .generate(org.id, { title: name, content })
        .finally(() => (rendering = false));
      await probe;
      console.info(
        `generateDocument(${name}): ${Math.round(performance.now() - started)} ms; slowest /healthz meanwhile ${slowest.toFixed(1)} ms`,
      );
      expect(documentId).toBeTypeOf('string');
      // Seconds of layout (on the main thread it held every request until the end): requests are
      // answered meanwhile. Timings depend on the machine and are printed, not asserted.
      if (name === 'a 90,000-line code block') expect(answered).toBeGreaterThan(1);
    }
  }, 150_000); // ten CPU-heavy renders in a row: on 2 busy cores (the browser tests run beside it) they take a while

  it('stops a render that outlives its deadline; the tool call fails with a message the model can act on', async () => {
    const strict = await startTestApp({ DOCUMENT_RENDER_TIMEOUT_SECONDS: '1' });
    try {
      const { org } = await createTenant(strict);
      await expect(
        strict.container.services.documents.generate(org.id, { title: 'Long', content: `\`\`\`\n${'a\n'.repeat(90_000)}\`\`\`` }),
      ).rejects.toThrow('The document took longer than 1 s to render and was stopped: make it shorter or simpler');
      // The pool replaces the stopped thread: the next document renders.
      expect(await strict.container.services.documents.generate(org.id, { title: 'Short', content: 'fine' })).toEqual({
        documentId: expect.any(String),
      });
    } finally {
      await strict.close();
    }
  });

  it('keeps documents inside their org: another tenant gets 404', async () => {
    const owner = await createTenant(app);
    const intruder = await createTenant(app);
    const { documentId } = await app.container.services.documents.generate(owner.org.id, {
      title: 'Private',
      content: 'secret plan',
    });
    expect((await app.request('GET', `/orgs/${owner.org.slug}/documents/${documentId}`, { token: intruder.token })).status).toBe(
      404,
    );
    expect(
      (await app.request('GET', `/orgs/${intruder.org.slug}/documents/${documentId}`, { token: intruder.token })).status,
    ).toBe(404);
    expect(
      (await (await app.request('GET', `/orgs/${intruder.org.slug}/documents`, { token: intruder.token })).json()).documents,
    ).toEqual([]);
    expect((await app.request('GET', `/orgs/${owner.org.slug}/documents/${documentId}`)).status).toBe(401);
  });
});
