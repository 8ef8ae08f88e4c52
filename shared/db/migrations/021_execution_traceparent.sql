-- The W3C traceparent of the span that created an execution (the create_execution span of a
-- request, or a schedule's fire), when the creating process traces (docs/operations.md,
-- "Tracing"). Kept with the row, not the wake-up job, so that every claim — after a sleep, a
-- hand-back, a recovery, a re-sent wake-up — starts its spans in the same trace. Null when tracing
-- was off; nothing reads it but the runner's claim. At most 55 characters (version 00).
ALTER TABLE executions ADD COLUMN traceparent text CHECK (char_length(traceparent) <= 55);
