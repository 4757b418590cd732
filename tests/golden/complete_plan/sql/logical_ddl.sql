-- subscriptions (version 2): Subscriptions warehouse of a streaming service
-- Money is in USD. Query these tables by name with api.query(sql).

-- A priced subscription plan
CREATE TABLE plan (
  id BIGINT PRIMARY KEY,  -- unique id
  name VARCHAR NOT NULL,  -- Plan name
  tier VARCHAR NOT NULL,  -- Plan tier (one of basic, standard, premium)
  monthly_price DOUBLE NOT NULL  -- Monthly price in dollars
);

-- A paying customer
CREATE TABLE subscriber (
  id BIGINT PRIMARY KEY,  -- unique id
  plan_id BIGINT NOT NULL REFERENCES plan(id),  -- current plan
  referrer_id BIGINT REFERENCES subscriber(id),  -- who referred them
  country VARCHAR NOT NULL,  -- ISO country code
  joined_on DATE NOT NULL,  -- Sign-up date
  churned BOOLEAN NOT NULL,  -- Whether the subscription ended
  legacy_code VARCHAR  -- DEPRECATED: use id. Old CRM code
);

-- One monthly charge
CREATE TABLE payment (
  id BIGINT PRIMARY KEY,  -- unique id
  subscriber_id BIGINT NOT NULL REFERENCES subscriber(id),
  amount DOUBLE NOT NULL,  -- Charged amount in dollars
  paid_at TIMESTAMP NOT NULL,  -- When the charge succeeded
  refunded BOOLEAN NOT NULL  -- Whether it was refunded
);

-- A discount code from the old checkout
CREATE TABLE coupon (
  code BIGINT PRIMARY KEY,  -- unique id
  percent_off DOUBLE NOT NULL  -- DEPRECATED: coupons were retired in version 2; use Plan prices. Discount percent
);

-- Metrics
-- revenue: Revenue net of refunds = sum(payment.amount) - sum(payment.amount * payment.refunded)
-- churn_rate: Share of subscribers who churned = sum(subscriber.churned) / count(subscriber.id)
-- avg_payment:  = (sum(payment.amount) + 0) / --count(payment.id)
