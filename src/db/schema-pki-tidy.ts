/** The PKI tidy table (migration 0008-pki-tidy). */
export interface PkiTidyTables {
  pki_tidy: PkiTidyTable;
}

export interface PkiTidyTable {
  mount_id: string;
  /** JSON of the auto-tidy configuration, or null when never written (defaults apply). */
  auto_config: string | null;
  /** 1 when auto-tidy is enabled (a copy of auto_config.enabled the periodic check can filter on). */
  auto_enabled: number;
  /** When the last tidy finished (or auto-tidy was enabled): auto-tidy's interval counts from here. */
  last_auto_tidy_at: string | null;
  /** Inactive, Running, Finished, Error, Cancelling or Cancelled. */
  state: string;
  /** Id of the current or latest run; the job carries it so a stale job never touches a newer run. */
  run_id: string | null;
  job_id: string | null;
  /** JSON of the parameters of the current or latest run. */
  params: string | null;
  started_at: string | null;
  finished_at: string | null;
  message: string | null;
  error: string | null;
  /** JSON map of the run's counters. */
  counts: string;
  updated_at: string;
}
