/**
 * ONNX Runtime's messages name the file it was given and the C++ source lines that threw
 * (`/onnxruntime_src/onnxruntime/core/graph/model.cc:180 onnxruntime::Model::Model(...)`). Neither
 * is the caller's business: a temporary path tells what the service's disk looks like, and a source
 * path tells nothing useful. What is left is the runtime's own reason.
 */

/** Most characters of a runtime message kept. */
const MAX_CHARS = 1000;

/**
 * `message` without file paths and source locations: `/a/b/c.cc:12 Fn(args)` and any other absolute
 * path are dropped (a path followed by `:line` takes the C++ signature after it along), runs of
 * spaces folded, and the whole cut to 1,000 characters.
 */
export function runtimeReason(message: string): string {
  return (
    message
      // A source location and the function signature the runtime prints after it.
      .replace(/(?<=^|[\s:'"(=])\/[^\s:'"]*:\d+\s+(?:[\w:~<>,*& ]+?\([^)]*\)(?:\s*\[[^\]]*\])?)?/g, '')
      // Any other absolute path (a model file, a temporary folder, an external data file).
      .replace(/(?<=^|[\s:'"(=])(?:\/[^\s/:'"]+)+\/?/g, '<path>')
      .replace(/\s+/g, ' ')
      .trim()
      .slice(0, MAX_CHARS)
  );
}
