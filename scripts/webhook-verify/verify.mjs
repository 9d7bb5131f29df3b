// Verifies webhook deliveries with the Standard Webhooks reference implementation.
// stdin: a JSON array of {secret, headers: {"webhook-id", "webhook-timestamp",
// "webhook-signature"}, body}; stdout: "verified N"; exit 1 naming the first delivery
// that does not verify.
import { Webhook } from "standardwebhooks";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const deliveries = JSON.parse(input);
deliveries.forEach((d, i) => {
  try {
    const payload = new Webhook(d.secret).verify(d.body, d.headers);
    if (payload.id !== d.headers["webhook-id"]) {
      throw new Error(`payload id ${payload.id} is not the webhook-id ${d.headers["webhook-id"]}`);
    }
  } catch (err) {
    console.error(`delivery ${i} (${d.headers["webhook-id"]}): ${err.message}`);
    process.exit(1);
  }
});
console.log(`verified ${deliveries.length}`);
