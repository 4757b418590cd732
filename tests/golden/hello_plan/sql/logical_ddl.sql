-- hello (version 1): A one-table shop
-- Money is in USD. Query these tables by name with api.query(sql).

-- Something the shop sells
CREATE TABLE product (
  id BIGINT PRIMARY KEY,  -- unique id
  name VARCHAR NOT NULL,  -- Product name
  price DOUBLE NOT NULL  -- List price in dollars
);
