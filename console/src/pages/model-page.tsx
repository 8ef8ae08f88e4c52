/**
 * An ONNX model's revision: the model's inputs and outputs (name, element type, shape), an upload
 * with a progress bar — a file past the blob's `onnx.model_bytes` refused in the page, before a
 * byte is sent — and a `run_model` form with a tensor per input.
 */
import { useState, type FormEvent } from 'react';
import { ApiError } from '../../../client/src/index.ts';
import type { components } from '../../../client/src/rest-types.ts';
import { ok } from '../api/service.ts';
import { useLoad } from '../api/use-load.ts';
import { useService } from '../context.ts';
import { Link, seg } from '../router.tsx';
import { Empty, Json, Loading, Refusal } from '../ui/states.tsx';

type Model = components['schemas']['Model'];
type TensorSpec = NonNullable<Model['inputs']>[number];

/** A tensor of the input's type and shape to start from: symbolic dimensions as 1, elements zero. */
function exampleTensor(spec: TensorSpec): { type: string; dims: number[]; data: unknown[] } {
  const dims = spec.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1));
  const count = Math.min(
    dims.reduce((a, b) => a * b, 1),
    64,
  );
  const zero = spec.type === 'bool' ? false : spec.type === 'string' ? '' : 0;
  return { type: spec.type, dims, data: Array.from({ length: count }, () => zero) };
}

const bytesInWords = (n: number) => `${n.toLocaleString('en')} bytes`;

export default function ModelPage({
  orgId,
  blobId,
  revisionId,
}: {
  orgId: string;
  blobId: string;
  revisionId: string;
}) {
  const service = useService();
  const revision = useLoad(
    () => ok(service.rest.GET('/v1/revisions/{id}', { params: { path: { id: revisionId } } })),
    revisionId,
  );
  // The bound in force for this blob, so a file past it is refused before it is sent.
  const limits = useLoad(
    () =>
      ok(
        service.rest.GET('/v1/blobs/{org_id}/{blob_id}/limits', {
          params: { path: { org_id: orgId, blob_id: blobId } },
        }),
      ),
    orgId + blobId,
  );
  const bound =
    limits.state === 'ready'
      ? limits.data.groups.flatMap((group) => group.limits).find((limit) => limit.id === 'onnx.model_bytes')?.value
      : undefined;
  const model = revision.state === 'ready' ? (revision.data.revision.model ?? null) : null;
  const blobPath = `/orgs/${seg(orgId)}/blobs/${seg(blobId)}`;

  return (
    <main>
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link to="/">Organizations</Link> / <Link to={`/orgs/${seg(orgId)}`}>Organization</Link> /{' '}
        <Link to={blobPath}>Blob</Link>
      </nav>
      <h1>Model {revision.state === 'ready' ? `(revision ${revision.data.revision.number})` : ''}</h1>
      {revision.state === 'loading' && <Loading what="the revision" />}
      {revision.state === 'error' && <Refusal error={revision.error} />}
      {revision.state === 'ready' && (
        <dl className="facts">
          <dt>Status</dt>
          <dd data-testid="revision-status">{revision.data.revision.status}</dd>
          {model && (
            <>
              <dt>Size</dt>
              <dd>{bytesInWords(model.size)}</dd>
              <dt>SHA-256</dt>
              <dd>
                <code>{model.sha256}</code>
              </dd>
            </>
          )}
        </dl>
      )}
      <section aria-labelledby="signature-heading">
        <h2 id="signature-heading">Inputs and outputs</h2>
        {revision.state === 'ready' && !model && <Empty>No model yet: upload one below.</Empty>}
        {model && (
          <>
            <TensorTable caption="Inputs" specs={model.inputs ?? []} />
            <TensorTable caption="Outputs" specs={model.outputs ?? []} />
          </>
        )}
      </section>
      <Upload
        revisionId={revisionId}
        bound={typeof bound === 'number' ? bound : null}
        onUploaded={() => void revision.reload()}
      />
      {model && <RunForm key={model.sha256} revisionId={revisionId} model={model} />}
    </main>
  );
}

function TensorTable({ caption, specs }: { caption: string; specs: TensorSpec[] }) {
  return (
    <table className="tensors">
      <caption>{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Element type</th>
          <th scope="col">Shape</th>
        </tr>
      </thead>
      <tbody>
        {specs.map((spec) => (
          <tr key={spec.name}>
            <th scope="row">
              <code>{spec.name}</code>
            </th>
            <td>{spec.type}</td>
            <td>
              <code>[{spec.shape.map((d) => String(d)).join(', ')}]</code>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Upload({
  revisionId,
  bound,
  onUploaded,
}: {
  revisionId: string;
  bound: number | null;
  onUploaded: () => void;
}) {
  const service = useService();
  const [file, setFile] = useState<File | null>(null);
  const [progress, setProgress] = useState<{ sent: number; total: number } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!file) return;
    setError(null);
    setDone('');
    // The service would refuse it before reading the body; the page refuses it before sending it.
    if (bound !== null && file.size > bound) {
      setError(
        new ApiError(
          {
            error: 'limit_exceeded',
            message: `The file is ${bytesInWords(file.size)}, more than this blob's models may be; nothing was sent.`,
            limit: { id: 'onnx.model_bytes', value: bound },
          },
          400,
        ),
      );
      return;
    }
    setBusy(true);
    setProgress({ sent: 0, total: file.size });
    try {
      await service.upload(`/v1/revisions/${seg(revisionId)}/model`, file, (sent, total) =>
        setProgress({ sent, total }),
      );
      setDone(`Uploaded ${file.name}: ONNX Runtime opened it.`);
      onUploaded();
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="upload-heading">
      <h2 id="upload-heading">Upload a model</h2>
      <form onSubmit={(event) => void submit(event)}>
        <label htmlFor="model-file">Model file (.onnx)</label>
        <input
          id="model-file"
          type="file"
          accept=".onnx"
          onChange={(event) => {
            setFile(event.target.files?.[0] ?? null);
            setProgress(null);
            setError(null);
          }}
        />
        <p className="muted">
          {bound !== null ? `At most ${bytesInWords(bound)} (limit onnx.model_bytes). ` : ''}
          Uploading again replaces the model.
        </p>
        <button type="submit" disabled={!file || busy}>
          {busy ? 'Uploading…' : 'Upload model'}
        </button>
      </form>
      {progress && (
        <p>
          <progress
            value={progress.sent}
            max={Math.max(progress.total, 1)}
            aria-label="Upload progress"
            data-testid="upload-progress"
          />{' '}
          {bytesInWords(progress.sent)} of {bytesInWords(progress.total)} sent
        </p>
      )}
      {done && (
        <p role="status" data-testid="upload-done">
          {done}
        </p>
      )}
      {error !== null && <Refusal error={error} action="Uploading" />}
    </section>
  );
}

function RunForm({ revisionId, model }: { revisionId: string; model: Model }) {
  const service = useService();
  const inputs = model.inputs ?? [];
  const [texts, setTexts] = useState<Record<string, string>>(() =>
    Object.fromEntries(inputs.map((spec) => [spec.name, JSON.stringify(exampleTensor(spec))])),
  );
  const [outputs, setOutputs] = useState<Record<string, unknown> | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const run = async (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    const tensors: Record<string, unknown> = {};
    for (const spec of inputs) {
      try {
        tensors[spec.name] = JSON.parse(texts[spec.name] ?? '');
      } catch (caught) {
        setError(new Error(`Input ${spec.name} is not JSON: ${(caught as Error).message}`));
        return;
      }
    }
    setBusy(true);
    try {
      const answer = await service.command('run_model', revisionId, { inputs: tensors as never });
      setOutputs(answer.outputs);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="run-heading">
      <h2 id="run-heading">Run the model</h2>
      <p className="muted">
        Each input as a tensor: <code>{'{"type", "dims", "data"}'}</code>, the elements in row-major order.
      </p>
      <form onSubmit={(event) => void run(event)}>
        {inputs.map((spec) => (
          <div key={spec.name}>
            <label htmlFor={`input-${spec.name}`}>Input {spec.name} (JSON tensor)</label>
            <textarea
              id={`input-${spec.name}`}
              rows={3}
              value={texts[spec.name] ?? ''}
              onChange={(event) => setTexts((current) => ({ ...current, [spec.name]: event.target.value }))}
            />
          </div>
        ))}
        <button type="submit" disabled={busy}>
          {busy ? 'Running…' : 'Run model'}
        </button>
      </form>
      {error !== null && <Refusal error={error} action="Running the model" />}
      {outputs && (
        <div className="model-outputs">
          <h3>Outputs</h3>
          {Object.entries(outputs).map(([name, tensor]) => (
            <Json key={name} value={tensor} label={`Output ${name}`} />
          ))}
        </div>
      )}
    </section>
  );
}
