// Reads a Parquet file with DuckDB and prints, as JSON, its columns' types and its rows
// in file order (timestamp as epoch ms and as DuckDB's UTC text), for the gateway's tests
// to compare with the NDJSON export of the same query.
//   node read.mjs FILE.parquet
import { DuckDBInstance } from '@duckdb/node-api';

const file = process.argv[2];
if (!file) {
  console.error('usage: node read.mjs FILE.parquet');
  process.exit(2);
}
const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
await conn.run("SET TimeZone = 'UTC'");
const lit = "'" + file.replaceAll("'", "''") + "'";
const schema = (await conn.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${lit})`)).getRowObjectsJson()
  .map((r) => ({ name: r.column_name, type: r.column_type }));
const rows = (await conn.runAndReadAll(
  `SELECT * EXCLUDE (timestamp, file_row_number), epoch_ms(timestamp)::DOUBLE AS timestamp_ms,
          strftime(timestamp, '%Y-%m-%dT%H:%M:%S.%gZ') AS timestamp_utc
     FROM read_parquet(${lit}, file_row_number = true) ORDER BY file_row_number`)).getRowObjectsJson();
const meta = (await conn.runAndReadAll(
  `SELECT count(DISTINCT row_group_id)::INTEGER AS row_groups, max(row_group_num_rows)::INTEGER AS max_rows, any_value(compression) AS compression
     FROM parquet_metadata(${lit})`)).getRowObjectsJson()[0];
process.stdout.write(JSON.stringify({ schema, rows, meta }));
