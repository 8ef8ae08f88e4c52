/** An NLP dataset's revision: its records in upload order, paged with the API's cursor. */
import { usePages } from '../api/use-load.ts';
import { useService } from '../context.ts';
import { Empty, Loading, More, Refusal } from '../ui/states.tsx';

export default function NlpRecordsPage({ revisionId }: { revisionId: string }) {
  const service = useService();
  const records = usePages(async (cursor) => {
    const page = await service.command('list_records', revisionId, cursor ? { cursor } : {});
    return { items: page.records, next: page.cursor };
  }, revisionId);
  return (
    <main>
      <h1>Dataset records</h1>
      {records.state === 'loading' && <Loading what="records" />}
      {records.state === 'error' && <Refusal error={records.error} />}
      {records.state === 'ready' && records.items.length === 0 && <Empty>No record yet.</Empty>}
      {records.items.length > 0 && (
        <table className="records">
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col">Text</th>
              <th scope="col">Labels</th>
              <th scope="col">Meta</th>
            </tr>
          </thead>
          <tbody>
            {records.items.map((record) => (
              <tr key={record.id}>
                <th scope="row">{record.id}</th>
                <td>{record.text}</td>
                <td>{record.labels.join(', ')}</td>
                <td>{record.meta ? <code>{JSON.stringify(record.meta)}</code> : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <More hasMore={records.hasMore} loading={records.state === 'more'} onMore={() => void records.more()} />
    </main>
  );
}
