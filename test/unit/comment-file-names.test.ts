/**
 * A comment that names a .ts/.tsx file of the repository (its name, with or without its folder)
 * must name one that exists: a file renamed or removed leaves comments pointing nowhere. Every
 * .ts/.tsx file git tracks is read (not web/src/api/schema.d.ts, which openapi-typescript
 * generates), its comments found with the TypeScript parser, and each .ts/.tsx name in them looked
 * up among the basenames of the tracked files.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const GENERATED = new Set(['web/src/api/schema.d.ts']);

/** A .ts/.tsx file name, possibly after a path; the name is the first group. */
const FILE_NAME = /(?<![\w@/.-])(?:[\w.-]+\/)*(\w[\w.-]*\.tsx?)(?![\w.-]*\w)/g;

function trackedFiles(): string[] {
  return execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' })
    .split('\0')
    .filter((file) => file && !file.startsWith('node_modules/'));
}

/** The comments of one source file, each with the line it starts on. */
export function commentsOf(file: string, text: string): { line: number; text: string }[] {
  const kind = file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, kind);
  const seen = new Set<number>();
  const comments: { line: number; text: string }[] = [];
  const collect = (ranges: ts.CommentRange[] | undefined) => {
    for (const range of ranges ?? []) {
      if (seen.has(range.pos)) continue;
      seen.add(range.pos);
      const line = source.getLineAndCharacterOfPosition(range.pos).line + 1;
      comments.push({ line, text: text.slice(range.pos, range.end) });
    }
  };
  const visit = (node: ts.Node) => {
    collect(ts.getLeadingCommentRanges(text, node.getFullStart()));
    collect(ts.getTrailingCommentRanges(text, node.getEnd()));
    ts.forEachChild(node, visit);
  };
  visit(source);
  return comments;
}

/** The .ts/.tsx file names a comment mentions (basenames). */
export const fileNamesIn = (comment: string): string[] => [...comment.matchAll(FILE_NAME)].map((m) => m[1]!);

describe('comments name files that exist', () => {
  it('finds the names in comments, and only there', () => {
    // the sample's file names are put together here, so no line of this file names them in a comment
    const [ts, tsx] = ['.ts', '.tsx'];
    const code = [
      `/** Made by domain/x/foo-bar${ts}, see baz${tsx}. */`,
      `const a = 'not-a-comment${ts}'; // trailing qux-quux${ts}`,
      `const b = 1; /* @scope/pkg${ts} is not a path of ours? it is: pkg${ts} */`,
      `// types.d${ts} and a sentence ending in file${ts}.`,
    ].join('\n');
    const names = commentsOf('x.ts', code).flatMap((c) => fileNamesIn(c.text));
    expect(names).toEqual(['foo-bar.ts', 'baz.tsx', 'qux-quux.ts', 'pkg.ts', 'types.d.ts', 'file.ts']);
  });

  it('every .ts/.tsx file named in a comment exists in the repository', () => {
    const files = trackedFiles();
    const names = new Set(files.map((file) => path.basename(file)));
    const missing = files
      .filter((file) => /\.tsx?$/.test(file) && !GENERATED.has(file))
      .flatMap((file) =>
        commentsOf(file, readFileSync(path.join(root, file), 'utf8')).flatMap((comment) =>
          fileNamesIn(comment.text)
            .filter((name) => !names.has(name))
            .map((name) => `${file}:${comment.line} names ${name}`),
        ),
      );
    expect(missing).toEqual([]);
  });
});
