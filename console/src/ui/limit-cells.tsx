/** How the console writes a limit's value, and the cells both limits tables show of one limit in force. */
import { limitValueText } from '../../../shared/limits/limit-text.ts';

/** A limit's value in words as the service's messages write it (`unbounded`, `[a, b]`), thousands grouped. */
export const limitValue = (value: unknown): string => limitValueText(value, (n) => n.toLocaleString('en'));

interface InForce {
  value: unknown;
  source: string;
  default: unknown;
  /** Absent (REST) or null (ops GraphQL) where the target read is not the holder. */
  held?: number | null;
}

/** The value in force, where it came from, the default and what is held: four cells of a limit's row. */
export function InForceCells({ limit }: { limit: InForce }) {
  return (
    <>
      <td className="value">{limitValue(limit.value)}</td>
      <td className={`source ${limit.source}`}>
        {limit.source === 'default' ? 'default' : `${limit.source} override`}
      </td>
      <td>{limitValue(limit.default)}</td>
      <td>{limit.held === undefined || limit.held === null ? '—' : limitValue(limit.held)}</td>
    </>
  );
}
