import { PDFParse } from 'pdf-parse';
import { describe, expect, it } from 'vitest';
import { markdownToPdf } from './markdown-pdf.ts';

/** How often a PDF's text holds `words`. */
async function timesShown(title: string, markdown: string, words: string) {
  const { pdf } = await markdownToPdf(title, markdown);
  const { text } = await new PDFParse({ data: pdf }).getText();
  return text.split(words).length - 1;
}

describe("a document's title", () => {
  it('is shown once when the content opens with it as its first heading, in any case and spacing', async () => {
    expect(await timesShown('Invoice 42', '# Invoice 42\n\n| item | qty |\n|--|--|\n| Widget | 2 |', 'Invoice 42')).toBe(1);
    expect(await timesShown('Invoice 42', '\n\n#   invoice  42\n\nDue in 30 days.', 'nvoice 42')).toBe(1);
  });

  it('is shown above a content that opens otherwise, or repeats it further down', async () => {
    expect(await timesShown('Invoice 42', '# Summary\n\nInvoice 42 is due.', 'Invoice 42')).toBe(2);
    expect(await timesShown('Invoice 42', '## Invoice 42\n\nDue.', 'Invoice 42')).toBe(2);
    expect(await timesShown('Invoice 42', 'Intro.\n\n# Invoice 42', 'Invoice 42')).toBe(2);
  });
});
