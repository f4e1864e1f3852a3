/**
 * A small router over the History API (the app has a handful of paths): `useRoute()` gives the
 * path under /app/, `navigate()` changes it, `<Link>` is a real link that routes in place.
 */
import { useEffect, useState, type AnchorHTMLAttributes } from 'react';

export const BASE = '/app/';
const listeners = new Set<() => void>();
const current = () => (location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : '');

export function navigate(path: string, opts: { replace?: boolean } = {}) {
  const url = BASE + path.replace(/^\//, '');
  if (opts.replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  for (const fn of listeners) fn();
}

export function useRoute(): string {
  const [path, setPath] = useState(current);
  useEffect(() => {
    const update = () => setPath(current());
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return path;
}

export function Link({ to, ...rest }: AnchorHTMLAttributes<HTMLAnchorElement> & { to: string }) {
  return (
    <a
      {...rest}
      href={BASE + to.replace(/^\//, '')}
      onClick={(e) => {
        if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(to);
      }}
    />
  );
}
